package publishernode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/multiformats/go-multiaddr"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/internal/httpserve"
)

// StateFile is the file in Config.Dir (-dir) that keeps the publishers' positions.
const StateFile = "publisher-state.json"

// announceTimeout bounds one round of announces of one head.
const announceTimeout = 5 * time.Second

// state is the content of StateFile: what the chains are made of, and how
// many ads each publisher has published.
type state struct {
	Seed        uint64
	Entries     int
	ChunkSize   int
	RemoveEvery int
	UpdateEvery int
	// PieceContextEvery is absent (0) in files written before it existed,
	// which is what those chains were made with.
	PieceContextEvery int `json:",omitempty"`
	Fault             Fault
	Ads               []int // per publisher index
}

func (c Config) state() state {
	return state{Seed: c.Seed, Entries: c.Entries, ChunkSize: c.ChunkSize,
		RemoveEvery: c.RemoveEvery, UpdateEvery: c.UpdateEvery, PieceContextEvery: c.PieceContextEvery, Fault: c.Fault}
}

// sameChains reports whether s makes the same chains as o.
func (s state) sameChains(o state) bool {
	return s.Seed == o.Seed && s.Entries == o.Entries && s.ChunkSize == o.ChunkSize &&
		s.RemoveEvery == o.RemoveEvery && s.UpdateEvery == o.UpdateEvery && s.PieceContextEvery == o.PieceContextEvery &&
		s.Fault == o.Fault
}

// loadState reads the state of dir; ok is false if there is none.
func loadState(dir string) (s state, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("%w: %w", ErrState, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("%w: %s: %w", ErrState, StateFile, err)
	}
	return s, true, nil
}

// saveState writes s to dir atomically (a temporary file renamed).
func saveState(dir string, s state) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, StateFile))
}

// Listeners are the HTTP listeners of a [Node]; the caller binds them (a
// test passes net.Listen("tcp", "127.0.0.1:0") for each).
type Listeners struct {
	// Publishers are the listeners of the publishers, one each, in
	// order: publisher i serves its chain (ipnisync) and GET /truth on
	// Publishers[i]. Required, as many as Config.Publishers, on IPv4
	// TCP addresses (announces carry /ip4/<host>/tcp/<port>/http).
	Publishers []net.Listener
}

// Addrs is where a [Node] listens.
type Addrs struct {
	// Publishers are the "host:port" of each publisher's listener.
	Publishers []string
}

// PublisherURL is the base URL of publisher i, http://<Publishers[i]>.
func (a Addrs) PublisherURL(i int) string { return "http://" + a.Publishers[i] }

// Node is the generated-publisher role: Config.Publishers [Publisher]s,
// each served on its own listener, that publish an ad every
// Config.Interval and announce each new head. Build it with [New], serve
// with [Node.Run], release with [Node.Close].
type Node struct {
	r       *runner
	lns     []net.Listener
	started atomic.Bool
	once    sync.Once
}

// New validates cfg, generates the publishers' chains (where Config.Dir
// says they were, or with Config.InitialAds ads) and builds the node on
// lns. It starts no goroutine. A state file in Dir written with another
// configuration is [ErrState]. On error it has closed what it opened;
// the error names the field at fault.
func New(ctx context.Context, cfg Config, lns Listeners) (_ *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("publishernode: config: %w", err)
	}
	if len(lns.Publishers) != cfg.Publishers || slices.Contains(lns.Publishers, nil) {
		return nil, fmt.Errorf("publishernode: Listeners.Publishers: want %d listeners, one per publisher", cfg.Publishers)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	// Where each publisher starts: a fresh chain, or where Dir says.
	ads := make([]int, cfg.Publishers)
	for i := range ads {
		ads[i] = cfg.InitialAds
		if cfg.MaxAds > 0 {
			ads[i] = min(ads[i], cfg.MaxAds)
		}
	}
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("publishernode: Dir: %w", err)
		}
		s, ok, err := loadState(cfg.Dir)
		if err != nil {
			return nil, err
		}
		if ok {
			if !s.sameChains(cfg.state()) {
				return nil, fmt.Errorf("%w: %s was written with seed %d, entries %d, chunk size %d, remove-every %d, update-every %d, piece-context-every %d, fault %q",
					ErrState, filepath.Join(cfg.Dir, StateFile), s.Seed, s.Entries, s.ChunkSize, s.RemoveEvery, s.UpdateEvery, s.PieceContextEvery, s.Fault)
			}
			for i := range min(len(ads), len(s.Ads)) {
				ads[i] = s.Ads[i]
			}
		}
	}

	pubs := make([]*Publisher, cfg.Publishers)
	for i := range pubs {
		if pubs[i], err = NewPublisher(cfg.Spec(i, ads[i])); err != nil {
			return nil, fmt.Errorf("publishernode: publisher %d: %w", i, err)
		}
	}
	r := &runner{cfg: cfg, log: log, pubs: pubs, senders: make([]*announce.HTTPSender, len(pubs)), addrs: make([]multiaddr.Multiaddr, len(pubs))}
	defer func() {
		if err != nil {
			r.closeSenders()
		}
	}()
	for i, p := range pubs {
		host, port, _ := net.SplitHostPort(lns.Publishers[i].Addr().String())
		if r.addrs[i], err = multiaddr.NewMultiaddr("/ip4/" + host + "/tcp/" + port + "/http"); err != nil {
			return nil, fmt.Errorf("publishernode: Listeners.Publishers[%d]: %w", i, err)
		}
		if len(cfg.Announce) > 0 {
			if r.senders[i], err = announce.NewHTTPSender(cfg.Announce, p.ID()); err != nil {
				return nil, fmt.Errorf("publishernode: Announce: %w", err)
			}
		}
	}
	return &Node{r: r, lns: slices.Clone(lns.Publishers)}, nil
}

// Addrs reports where the node's publishers listen.
func (n *Node) Addrs() Addrs {
	a := Addrs{Publishers: make([]string, len(n.lns))}
	for i, ln := range n.lns {
		a.Publishers[i] = ln.Addr().String()
	}
	return a
}

// Publishers are the node's publishers, in order: their identities, heads
// and ground truth ([Publisher.Truth]).
func (n *Node) Publishers() []*Publisher { return slices.Clone(n.r.pubs) }

// Run announces the publishers' heads, then serves them and publishes an
// ad per publisher every Config.Interval (up to Config.MaxAds), saving the
// positions in Config.Dir and announcing each new head, until ctx is
// done. Then it shuts the servers down, waiting at most
// Config.ShutdownTimeout for requests in flight, and returns once every
// goroutine it started has exited: nil after a clean stop. Announce
// failures are logged, not returned. Run may be called once.
func (n *Node) Run(ctx context.Context) error {
	if n.started.Swap(true) {
		return ErrRunTwice
	}
	r := n.r
	eg, ctx := errgroup.WithContext(ctx)
	for i, p := range r.pubs {
		httpserve.Serve(ctx, eg, "publisher-"+strconv.Itoa(i), httpserve.NewServer(p, r.log), n.lns[i], r.cfg.ShutdownTimeout)
	}
	eg.Go(func() error { return r.produce(ctx) })
	return httpserve.WaitStopped(ctx, eg, r.log)
}

// Close releases what New opened: the announce senders, and the
// listeners if Run never ran. Call it after Run has returned. It is
// idempotent.
func (n *Node) Close() error {
	n.once.Do(func() {
		if !n.started.Swap(true) {
			for _, ln := range n.lns {
				ln.Close()
			}
		}
		n.r.closeSenders()
	})
	return nil
}

// runner publishes and announces.
type runner struct {
	cfg     Config
	log     *slog.Logger
	pubs    []*Publisher
	senders []*announce.HTTPSender // nil entries without Config.Announce
	addrs   []multiaddr.Multiaddr  // where publisher i serves
}

func (r *runner) closeSenders() {
	for _, s := range r.senders {
		if s != nil {
			s.Close()
		}
	}
}

// produce announces the heads the publishers start with, then publishes
// an ad per publisher every interval (up to Config.MaxAds), saving the
// positions in Config.Dir and announcing the new heads, until ctx is done.
func (r *runner) produce(ctx context.Context) error {
	r.announce(ctx)
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		published := false
		for i, p := range r.pubs {
			if (r.cfg.MaxAds > 0 && p.Ads() >= r.cfg.MaxAds) || p.Halted() {
				continue
			}
			if err := p.Publish(ctx, 1); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("publisher %d: %w", i, err)
			}
			published = true
			r.log.Debug("published", "publisher", p.ID().String(), "cid", p.Head().String(), "ads", p.Ads())
			if r.cfg.MaxAds > 0 && p.Ads() == r.cfg.MaxAds {
				r.log.Info("done producing: -max-ads reached; still serving", "publisher", p.ID().String(), "ads", p.Ads())
			}
		}
		if !published {
			continue
		}
		if r.cfg.Dir != "" {
			s := r.cfg.state()
			for _, p := range r.pubs {
				s.Ads = append(s.Ads, p.Ads())
			}
			if err := saveState(r.cfg.Dir, s); err != nil {
				return fmt.Errorf("publishernode: Dir: save state: %w", err)
			}
		}
		r.announce(ctx)
	}
}

// announce sends every publisher's head to the Config.Announce URLs at once,
// waiting at most announceTimeout. A failure is logged, not fatal: the
// receiver may be down, and the next head is announced anyway.
func (r *runner) announce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, announceTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range r.pubs {
		head := p.Head()
		if r.senders[i] == nil || !head.Defined() {
			continue
		}
		wg.Go(func() {
			err := r.senders[i].Send(ctx, announce.Message{Cid: head, Addrs: []multiaddr.Multiaddr{r.addrs[i]}})
			if err != nil {
				r.log.Warn("announce failed", "publisher", p.ID().String(), "cid", head.String(), "err", err)
				return
			}
			r.log.Debug("announced", "publisher", p.ID().String(), "cid", head.String())
		})
	}
	wg.Wait()
}
