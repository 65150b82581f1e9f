package localpool

// What starts a role, in either mode: its package's typed Config, built
// by the pool, and the start through New.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/piecenode"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// roleSpec is one start of a role: the typed Config of its package, the
// ports of its listeners, and what rebuilds the values that cannot cross
// a process boundary. The pool builds it ([Pool.spec]); goroutine mode
// starts it in this process, processes mode hands it, as JSON, to a child
// that [ServeRole] serves. Exactly one of the configs is set, the one of
// Kind; its Logger is nil (each side sets its own).
type roleSpec struct {
	Kind string
	// Listen are the role's listeners in the order its package takes
	// them, each bound on 127.0.0.1 at Port (0: any free port, at a
	// role's first start).
	Listen []listenSpec

	Indexer   *indexernode.Config   `json:",omitempty"`
	Assigner  *assignernode.Config  `json:",omitempty"`
	Scatter   *scatternode.Config   `json:",omitempty"`
	Publisher *publishernode.Config `json:",omitempty"`
	Piece     *piecenode.Config     `json:",omitempty"`
	Query     *querynode.Config     `json:",omitempty"`

	// PieceKey is the file of the piece sampler's signing key (Piece.Key
	// is loaded from it, or created there at the first start).
	PieceKey string `json:",omitempty"`
	// LayoutFile is the layout of a sharded front end: the layout file,
	// read again by ReloadLayout, or an etcd URL, whose layout the front
	// end follows by itself (Scatter.Layout is the one read when the spec
	// was built).
	LayoutFile string `json:",omitempty"`
}

// listenSpec is one listener of a role: its name (as [Pool.URLs] and the
// role's ports know it) and its port.
type listenSpec struct {
	Name string
	Port int
}

// service is a role made through its package's typed API: New has bound
// its listeners and opened what it needs; Run serves until its context
// ends; Close releases it.
type service interface {
	Run(ctx context.Context) error
	Close() error
}

// loopback are the announce-rate exempt sources of the pool's roles.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// dialingRoles are the kinds of role that dial addresses others name, and
// so run with AllowPrivateAddrs. The indexers (publishers, the frozen
// indexers of handoffs), the assigner (unknown publishers' heads, which it
// verifies before it assigns them) and the piece sampler (publishers)
// dial addresses that announces, provider records and admin requests
// name, and by default refuse loopback ones; every role of the pool
// listens on 127.0.0.1, so they need it. Outside such a pool it stays off.
var dialingRoles = []string{KindIndexer, KindAssigner, KindPiece}

// spec builds what starts r now, from the pool's Config and the other
// roles' URLs as they are now; r's ports are those it had (0 before its
// first start).
func (p *Pool) spec(r *role) (*roleSpec, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &roleSpec{Kind: r.kind}
	for _, name := range r.listeners {
		s.Listen = append(s.Listen, listenSpec{Name: name, Port: r.ports[name]})
	}
	switch r.kind {
	case KindIndexer:
		c := p.indexerConfig(r)
		s.Indexer = &c
	case KindAssigner:
		c := p.assignerConfig()
		s.Assigner = &c
	case KindScatter:
		c, err := p.scatterConfig()
		if err != nil {
			return nil, err
		}
		s.Scatter = &c
		if p.cfg.Sharded != nil {
			s.LayoutFile = p.ctl.spec
		}
	case KindPublisher:
		c := p.publisherConfig(r)
		s.Publisher = &c
	case KindPiece:
		c := p.pieceConfig()
		s.Piece, s.PieceKey = &c, filepath.Join(r.dir, "key")
	case KindQuery:
		c := p.queryConfig(r)
		s.Query = &c
	default:
		return nil, fmt.Errorf("kind %q: %w", r.kind, ErrUnknownKind)
	}
	return s, nil
}

// indexerConfig is indexer r's; p.mu is held.
func (p *Pool) indexerConfig(r *role) indexernode.Config {
	c := &p.cfg
	cfg := indexernode.DefaultConfig()
	cfg.Dir, cfg.Store, cfg.P2P = r.dir, c.Store, ""
	cfg.UseAssigner, cfg.AllowPrivateAddrs = true, true
	cfg.DiskBudget = c.DiskBudget
	if r.index == 0 && c.FreezeBudget > 0 {
		cfg.DiskBudget = c.FreezeBudget
	}
	cfg.FreezeAt, cfg.Progress = 90, 10*time.Second
	cfg.IndexSampling = true // the pool serves the multihash-sampling API
	cfg.AdminToken = p.token
	// The pool writes the file with this indexer's own find URL once it
	// is ready; the node reads it at each handoff.
	cfg.HandoffFromFile = filepath.Join(c.Dir, HandoffFromFile)
	cfg.AnnounceRateExempt = loopback // every role of this pool announces from loopback
	if sc := c.Sharded; sc != nil {
		cfg.Shard = &indexernode.ShardConfig{Layout: p.ctl.spec, Name: r.name, Token: p.shardToken, BatchBytes: sc.BatchBytes}
	}
	return cfg
}

// indexerRoles returns the pool's indexers, in order; p.mu is held.
func (p *Pool) indexerRoles() []*role {
	out := make([]*role, len(p.indexers))
	for i, name := range p.indexers {
		out[i] = p.roles[name]
	}
	return out
}

// assignerConfig is the assigner's, with every indexer of the pool; p.mu
// is held.
func (p *Pool) assignerConfig() assignernode.Config {
	c := &p.cfg
	cfg := assignernode.DefaultConfig()
	for _, ix := range p.indexerRoles() {
		cfg.Service.Indexers = append(cfg.Service.Indexers, assigner.ServiceIndexer{
			ID: ix.name, AdminURL: ix.url("admin"), FindURL: ix.url("find"), IngestURL: ix.url("ingest")})
	}
	cfg.Service.Replication, cfg.Service.PollInterval = c.Replication, c.PollInterval
	cfg.RequestTimeout = 5 * time.Second
	cfg.AdminToken, cfg.AllowPrivateAddrs = p.token, true
	cfg.AnnounceRateExempt = loopback // the pool's publishers announce from loopback
	return cfg
}

// scatterConfig is the front end's: over the indexers' find APIs, or, in
// a sharded pool, over the query nodes of the layout file as it is now;
// p.mu is held.
func (p *Pool) scatterConfig() (scatternode.Config, error) {
	cfg := scatternode.DefaultConfig()
	cfg.AssignerURL = p.roles[RoleAssigner].url("state") // the page shows its publishers and handoffs
	cfg.Timeout = 3 * time.Second
	if p.cfg.Sharded != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l, _, err := p.ctl.store.Load(ctx)
		cancel()
		if err != nil {
			return cfg, err
		}
		cfg.Layout, cfg.Hedge = &l, scatternode.DefaultLayoutHedge
		return cfg, nil
	}
	for _, ix := range p.indexerRoles() {
		cfg.Backends = append(cfg.Backends, ix.url("find"))
	}
	return cfg, nil
}

// publisherConfig is publisher role r's: the honest publishers (role
// RolePublishers or one added by AddPublishers) or a malicious one; p.mu
// is held.
func (p *Pool) publisherConfig(r *role) publishernode.Config {
	c := &p.cfg
	cfg := publishernode.DefaultConfig()
	cfg.Interval, cfg.Entries, cfg.InitialAds, cfg.Dir = c.Interval, c.Entries, c.InitialAds, r.dir
	cfg.Announce = []string{p.roles[RoleAssigner].url("announce")}
	if r.publishers > 0 { // honest
		cfg.Publishers, cfg.Seed, cfg.MaxAds = r.publishers, r.seed, c.MaxAds
		cfg.PieceContextEvery = max(0, c.PieceContextEvery)
		if c.RemoveEvery != 0 {
			cfg.RemoveEvery = max(0, c.RemoveEvery)
		}
		if c.UpdateEvery != 0 {
			cfg.UpdateEvery = max(0, c.UpdateEvery)
		}
	} else {
		cfg.Publishers, cfg.Seed, cfg.MaxAds = 1, c.Seed+1000+uint64(r.index), c.MaliciousMaxAds
		cfg.Fault = c.Malicious[r.index]
	}
	return cfg
}

// pieceConfig is the piece sampler's, over the front end's /providers,
// with an in-memory piece store; its key comes from roleSpec.PieceKey.
// p.mu is held.
func (p *Pool) pieceConfig() piecenode.Config {
	cfg := piecenode.DefaultConfig()
	cfg.ProvidersURL = p.roles[RoleScatter].url("find") + "/providers"
	cfg.PollInterval, cfg.RequestRate = 2*time.Second, 0
	cfg.AllowPrivateAddrs, cfg.AnnounceRateExempt = true, loopback
	return cfg
}

// queryConfig is query node r's; p.mu is held.
func (p *Pool) queryConfig(r *role) querynode.Config {
	cfg := querynode.DefaultConfig()
	cfg.Dir, cfg.Name, cfg.Layout, cfg.Store = r.dir, r.name, p.ctl.spec, p.cfg.Sharded.Config().Store
	cfg.Token, cfg.CommitInterval = p.shardToken, queryCommit
	return cfg
}

// ErrUnknownKind is a role of no known kind (ServeRole, a spec).
var ErrUnknownKind = errors.New("unknown kind of role")

// listen binds s's listeners on 127.0.0.1, in order.
func (s *roleSpec) listen() ([]net.Listener, error) {
	lns := make([]net.Listener, 0, len(s.Listen))
	for _, l := range s.Listen {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)))
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
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

// start makes the role through its package's New on lns (from
// [roleSpec.listen]), logging to log; the listeners are closed if it
// fails. Both modes start a role so.
func (s *roleSpec) start(ctx context.Context, log *slog.Logger, lns []net.Listener) (svc service, err error) {
	defer func() {
		if err != nil {
			closeAll(lns)
			svc = nil
		}
	}()
	need := map[string]int{KindIndexer: 3, KindAssigner: 2, KindScatter: 1, KindPiece: 1, KindQuery: 1}[s.Kind]
	if s.Kind == KindPublisher && s.Publisher != nil {
		need = s.Publisher.Publishers
	}
	if len(lns) != need {
		return nil, fmt.Errorf("%s: %d listeners, want %d", s.Kind, len(lns), need)
	}
	missing := fmt.Errorf("%s: the spec has no config of its kind", s.Kind)
	switch s.Kind {
	case KindIndexer:
		if s.Indexer == nil {
			return nil, missing
		}
		cfg := *s.Indexer
		cfg.Logger = log
		return indexernode.New(ctx, cfg, indexernode.Listeners{Find: lns[0], Ingest: lns[1], Admin: lns[2]})
	case KindAssigner:
		if s.Assigner == nil {
			return nil, missing
		}
		cfg := *s.Assigner
		cfg.Logger = log
		return assignernode.New(ctx, cfg, assignernode.Listeners{Announce: lns[0], State: lns[1]})
	case KindScatter:
		if s.Scatter == nil {
			return nil, missing
		}
		cfg := *s.Scatter
		cfg.Logger = log
		if etcdlayout.IsURL(s.LayoutFile) {
			return newEtcdScatter(ctx, cfg, lns[0], s.LayoutFile, log)
		}
		sc, err := scatternode.New(ctx, cfg, scatternode.Listeners{Find: lns[0]})
		if err != nil || s.LayoutFile == "" {
			return sc, err
		}
		return &layoutScatter{Scatter: sc, path: s.LayoutFile}, nil
	case KindPublisher:
		if s.Publisher == nil {
			return nil, missing
		}
		cfg := *s.Publisher
		cfg.Logger = log
		return publishernode.New(ctx, cfg, publishernode.Listeners{Publishers: lns})
	case KindPiece:
		if s.Piece == nil {
			return nil, missing
		}
		cfg := *s.Piece
		if cfg.Key, err = piece.LoadOrCreateKey(s.PieceKey); err != nil {
			return nil, err
		}
		cfg.Logger = log
		return piecenode.New(ctx, cfg, piecenode.Listeners{API: lns[0]})
	case KindQuery:
		if s.Query == nil {
			return nil, missing
		}
		cfg := *s.Query
		cfg.Logger = log
		return querynode.New(cfg, lns[0])
	}
	return nil, fmt.Errorf("kind %q: %w", s.Kind, ErrUnknownKind)
}
