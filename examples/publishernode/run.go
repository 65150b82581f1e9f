package publishernode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/multiformats/go-multiaddr"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/internal/cli"
)

// StateFile is the file in -dir that keeps the publishers' positions.
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

// Run is the publisher program: it parses args as examples/publisher's
// flags (see that command's documentation, or [Config]), starts the
// publishers, each on its own HTTP listener, and publishes an ad per
// publisher every -interval, announcing each new head to the -announce
// URLs, until ctx is done (SIGINT or SIGTERM in the binary, the caller's
// cancel in process). It logs to stderr one
// msg=listening name=publisher-<i> addr=<host:port> line per publisher,
// then a msg=publisher line with its index, peer ID and fault, then
// msg=starting. It returns nil after a clean shutdown and flag.ErrHelp
// for -h.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := LoadConfig(args, stderr)
	if err != nil {
		return err
	}
	log := cli.NewLogger(stderr, cfg.level())

	// Where each publisher starts: a fresh chain, or where -dir says.
	ads := make([]int, cfg.Publishers)
	for i := range ads {
		ads[i] = cfg.InitialAds
		if cfg.MaxAds > 0 {
			ads[i] = min(ads[i], cfg.MaxAds)
		}
	}
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return fmt.Errorf("-dir: %w", err)
		}
		s, ok, err := loadState(cfg.Dir)
		if err != nil {
			return err
		}
		if ok {
			if !s.sameChains(cfg.state()) {
				return fmt.Errorf("%w: %s was written with seed %d, entries %d, chunk size %d, remove-every %d, update-every %d, piece-context-every %d, fault %q",
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
			return fmt.Errorf("publisher %d: %w", i, err)
		}
	}

	lns, err := listen(cfg.Listen, len(pubs), cfg.MaxConns, cfg.MaxConnsPerIP)
	if err != nil {
		return err
	}
	senders := make([]*announce.HTTPSender, len(pubs))
	addrs := make([]multiaddr.Multiaddr, len(pubs))
	defer func() {
		for _, s := range senders {
			if s != nil {
				s.Close()
			}
		}
	}()
	for i, p := range pubs {
		host, port, _ := net.SplitHostPort(lns[i].Addr().String())
		if addrs[i], err = multiaddr.NewMultiaddr("/ip4/" + host + "/tcp/" + port + "/http"); err != nil {
			closeAll(lns)
			return err
		}
		if len(cfg.Announce) > 0 {
			if senders[i], err = announce.NewHTTPSender(cfg.Announce, p.ID()); err != nil {
				closeAll(lns)
				return fmt.Errorf("-announce: %w", err)
			}
		}
	}
	for i, p := range pubs {
		cli.LogListening(log, "publisher-"+strconv.Itoa(i), lns[i].Addr().String())
		log.Info("publisher", "index", i, "publisher", p.ID().String(), "ads", p.Ads(), "fault", string(p.Fault()))
	}
	log.Info("starting", "publishers", len(pubs), "seed", cfg.Seed, "interval", cfg.Interval.d().String(),
		"entries", cfg.Entries, "announce", cfg.Announce, "dir", cfg.Dir, "fault", string(cfg.Fault))

	r := &runner{cfg: cfg, log: log, pubs: pubs, senders: senders, addrs: addrs}
	eg, ctx := errgroup.WithContext(ctx)
	for i, p := range pubs {
		cli.Serve(ctx, eg, "publisher-"+strconv.Itoa(i), cli.NewHTTPServer(p, log), lns[i], cfg.ShutdownTimeout.d())
	}
	eg.Go(func() error { return r.produce(ctx) })
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx).Error())
	if err := eg.Wait(); err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// listen binds n listeners: on addr and the n-1 ports after it, or each
// on a free port when addr's port is 0; each with the connection caps
// maxConns and maxConnsPerIP (see cli.Listen).
func listen(addr string, n, maxConns, maxConnsPerIP int) ([]net.Listener, error) {
	host, portStr, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("-listen %q: port: %w", addr, err)
	}
	lns := make([]net.Listener, 0, n)
	for i := range n {
		p := 0
		if port != 0 {
			p = port + i
		}
		ln, err := cli.Listen(net.JoinHostPort(host, strconv.Itoa(p)), maxConns, maxConnsPerIP)
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("-listen: publisher-%d: %w", i, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}

// runner publishes and announces.
type runner struct {
	cfg     Config
	log     *slog.Logger
	pubs    []*Publisher
	senders []*announce.HTTPSender // nil entries without -announce
	addrs   []multiaddr.Multiaddr  // where publisher i serves
}

// produce announces the heads the publishers start with, then publishes
// an ad per publisher every interval (up to -max-ads), saving the
// positions in -dir and announcing the new heads, until ctx is done.
func (r *runner) produce(ctx context.Context) error {
	r.announce(ctx)
	t := time.NewTicker(r.cfg.Interval.d())
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
				return fmt.Errorf("-dir: save state: %w", err)
			}
		}
		r.announce(ctx)
	}
}

// announce sends every publisher's head to the -announce URLs at once,
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
