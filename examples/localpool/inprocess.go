package localpool

import (
	"context"
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
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/examples/piecenode"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/piece"
)

// service is a role made through its package's typed API: New has bound
// its listeners and opened what it needs; Run serves until its context
// ends; Close releases it.
type service interface {
	Run(ctx context.Context) error
	Close() error
}

// loopback are the announce-rate exempt sources of the pool's roles.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// inProcess reports whether r starts through its package's typed API in
// goroutine mode: its listeners are bound on 127.0.0.1 by the pool (port
// 0 at its first start, its ports since then after that), its ports come
// from the listeners and it is ready when New returns. No argv, no log
// scraping, no port retry.
func inProcess(string) bool { return true }

// startInProcess starts r in a goroutine through its package's typed
// API. Its log (slog text lines at info and above) goes to a tap that
// forwards to the role's log, so LogLines and WatchLog work as in the
// other modes.
func (p *Pool) startInProcess(ctx context.Context, r *role) (*run, error) {
	tap := logtap.New(r.log)
	logger := slog.New(slog.NewTextHandler(tap, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var lns []net.Listener
	listen := func(name string) (net.Listener, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(r.ports[name])) // 0 at the first start
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", name, err)
		}
		lns = append(lns, ln)
		return ln, nil
	}
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
		tap.Close()
	}
	var svc service
	var err error
	switch r.kind {
	case KindIndexer:
		svc, err = p.newIndexer(ctx, r, logger, listen)
	case KindAssigner:
		svc, err = p.newAssigner(ctx, r, logger, listen)
	case KindScatter:
		svc, err = p.newScatter(ctx, r, logger, listen)
	case KindPublisher:
		svc, err = p.newPublishers(ctx, r, logger, listen)
	case KindPiece:
		svc, err = p.newPiece(ctx, r, logger, listen)
	case KindQuery:
		svc, err = p.newQuery(r, logger, listen)
	default:
		err = fmt.Errorf("kind %s has no typed start", r.kind)
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	p.mu.Lock()
	for i, name := range r.listeners {
		r.ports[name] = lns[i].Addr().(*net.TCPAddr).Port
	}
	var werr error
	if r.kind == KindIndexer { // with its own find URL, now that its ports are known
		werr = p.writeHandoffFromLocked()
	}
	p.mu.Unlock()
	if werr != nil {
		svc.Close()
		tap.Close()
		return nil, werr
	}
	rctx, cancel := context.WithCancel(context.Background())
	cur := &run{tap: tap, cancel: cancel, done: make(chan struct{}), svc: svc}
	go func() {
		err := svc.Run(rctx)
		if cerr := svc.Close(); err == nil {
			err = cerr
		}
		cur.err = err
		tap.Close()
		close(cur.done)
	}()
	return cur, nil
}

// newIndexer makes indexer r: its listeners in the order of r.listeners
// (find, ingest, admin).
func (p *Pool) newIndexer(ctx context.Context, r *role, log *slog.Logger, listen func(string) (net.Listener, error)) (service, error) {
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
	cfg.HandoffFromFile = filepath.Join(c.Dir, HandoffFromFile)
	cfg.AnnounceRateExempt = loopback // every role of this pool announces from loopback
	cfg.Logger = log
	if sc := c.Sharded; sc != nil {
		cfg.Shard = &indexernode.ShardConfig{Layout: p.layoutPath(), Name: r.name, Token: p.shardToken, BatchBytes: sc.BatchBytes}
	}
	var lns indexernode.Listeners
	var err error
	if lns.Find, err = listen("find"); err != nil {
		return nil, err
	}
	if lns.Ingest, err = listen("ingest"); err != nil {
		return nil, err
	}
	if lns.Admin, err = listen("admin"); err != nil {
		return nil, err
	}
	// The HandoffFromFile must exist and list a URL when the node reads
	// it; the pool writes it with this indexer's own find URL just after.
	return indexernode.New(ctx, cfg, lns)
}

// indexerRoles returns the pool's indexers, in order; p.mu is held.
func (p *Pool) indexerRoles() []*role {
	out := make([]*role, len(p.indexers))
	for i, name := range p.indexers {
		out[i] = p.roles[name]
	}
	return out
}

// newAssigner makes the assigner, with every indexer of the pool.
func (p *Pool) newAssigner(ctx context.Context, r *role, log *slog.Logger, listen func(string) (net.Listener, error)) (service, error) {
	c := &p.cfg
	cfg := assignernode.DefaultConfig()
	p.mu.Lock()
	for _, ix := range p.indexerRoles() {
		cfg.Service.Indexers = append(cfg.Service.Indexers, assigner.ServiceIndexer{
			ID: ix.name, AdminURL: ix.url("admin"), FindURL: ix.url("find"), IngestURL: ix.url("ingest")})
	}
	p.mu.Unlock()
	cfg.Service.Replication, cfg.Service.PollInterval = c.Replication, c.PollInterval
	cfg.RequestTimeout = 5 * time.Second
	cfg.AdminToken, cfg.AllowPrivateAddrs = p.token, true
	cfg.AnnounceRateExempt = loopback // the pool's publishers announce from loopback
	cfg.Logger = log
	var lns assignernode.Listeners
	var err error
	if lns.Announce, err = listen("announce"); err != nil {
		return nil, err
	}
	if lns.State, err = listen("state"); err != nil {
		return nil, err
	}
	return assignernode.New(ctx, cfg, lns)
}

// newScatter makes the front end over the indexers' find APIs.
func (p *Pool) newScatter(ctx context.Context, r *role, log *slog.Logger, listen func(string) (net.Listener, error)) (service, error) {
	cfg := scatternode.DefaultConfig()
	if p.cfg.Sharded != nil {
		return p.newShardedScatter(ctx, cfg, log, listen)
	}
	p.mu.Lock()
	for _, ix := range p.indexerRoles() {
		cfg.Backends = append(cfg.Backends, ix.url("find"))
	}
	cfg.AssignerURL = p.roles[RoleAssigner].url("state") // the page shows its publishers and handoffs
	p.mu.Unlock()
	cfg.Timeout, cfg.Logger = 3*time.Second, log
	ln, err := listen("find")
	if err != nil {
		return nil, err
	}
	return scatternode.New(ctx, cfg, scatternode.Listeners{Find: ln})
}

// newPublishers makes a publisher role: the honest publishers (role
// RolePublishers or one added by AddPublishers) or a malicious one.
func (p *Pool) newPublishers(ctx context.Context, r *role, log *slog.Logger, listen func(string) (net.Listener, error)) (service, error) {
	c := &p.cfg
	cfg := publishernode.DefaultConfig()
	cfg.Interval, cfg.Entries, cfg.InitialAds, cfg.Dir = c.Interval, c.Entries, c.InitialAds, r.dir
	p.mu.Lock()
	cfg.Announce = []string{p.roles[RoleAssigner].url("announce")}
	p.mu.Unlock()
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
	cfg.Logger = log
	var lns publishernode.Listeners
	for _, name := range r.listeners {
		ln, err := listen(name)
		if err != nil {
			return nil, err
		}
		lns.Publishers = append(lns.Publishers, ln)
	}
	return publishernode.New(ctx, cfg, lns)
}

// newPiece makes the piece sampler over the front end's /providers, with
// an in-memory piece store and a signing key kept in its directory.
func (p *Pool) newPiece(ctx context.Context, r *role, log *slog.Logger, listen func(string) (net.Listener, error)) (service, error) {
	cfg := piecenode.DefaultConfig()
	p.mu.Lock()
	cfg.ProvidersURL = p.roles[RoleScatter].url("find") + "/providers"
	p.mu.Unlock()
	key, err := piece.LoadOrCreateKey(filepath.Join(r.dir, "key"))
	if err != nil {
		return nil, err
	}
	cfg.Key, cfg.PollInterval, cfg.RequestRate = key, 2*time.Second, 0
	cfg.AllowPrivateAddrs, cfg.AnnounceRateExempt = true, loopback
	cfg.Logger = log
	ln, err := listen("api")
	if err != nil {
		return nil, err
	}
	return piecenode.New(ctx, cfg, piecenode.Listeners{API: ln})
}
