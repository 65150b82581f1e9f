package indexernode

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	dspebble "github.com/ipfs/go-ds-pebble"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/pace"
	"github.com/indexkit/indexkit/internal/httpserve"
	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
)

// KeyFile is the node's identity inside its data directory (Config.Dir): the
// libp2p private key, protobuf-encoded, mode 0600, created on first start.
const KeyFile = "identity.key"

// Polls of a node with a disk budget (Config.DiskBudget): its usage moves
// with what it ingests, so it is read often.
const (
	budgetMinInterval = time.Second
	budgetMaxInterval = 5 * time.Second
)

// Other paths inside the data directory.
const (
	indexDir   = "index"       // the index store (pebble or leveldb)
	freezeFile = "freeze.json" // freeze state (freeze.FileStore)
)

// Listeners are the HTTP listeners a [Node] serves on; the caller binds
// them (a test passes net.Listen("tcp", "127.0.0.1:0")) and the node
// closes them. A nil listener: that API is not served.
type Listeners struct {
	// Find serves the IPNI find API (GET /multihash, /cid, /providers),
	// GET /health and /stats (scatter/find/health) and the IPNI sampling
	// API (GET /ipni/v0/sample/..., scatter/find/sample).
	Find net.Listener
	// Ingest serves announces (PUT /announce, /ingest/announce) and
	// GET /health.
	Ingest net.Listener
	// Admin serves the admin API the assigner calls (ingest/admin).
	Admin net.Listener
}

// Addrs is where a [Node] listens.
type Addrs struct {
	// ID is the node's peer ID.
	ID peer.ID
	// Find, Ingest and Admin are "host:port", "" for an API not served.
	Find, Ingest, Admin string
	// P2P are the libp2p listen addresses, each ending in /p2p/<ID>;
	// none without libp2p.
	P2P []multiaddr.Multiaddr
}

// FindURL, IngestURL and AdminURL are the base URLs of the APIs
// ("http://host:port"), "" for an API not served.
func (a Addrs) FindURL() string   { return httpURL(a.Find) }
func (a Addrs) IngestURL() string { return httpURL(a.Ingest) }
func (a Addrs) AdminURL() string  { return httpURL(a.Admin) }

func httpURL(hostport string) string {
	if hostport == "" {
		return ""
	}
	return "http://" + hostport
}

// Node is an indexer node: the index store, ingestion of the publishers
// announced to it or assigned to it, the freezer, handoffs, and the find,
// ingest and admin APIs. [New] makes it, [Node.Run] runs it,
// [Node.Close] releases it.
type Node struct {
	cfg   Config
	log   *slog.Logger
	key   crypto.PrivKey
	id    peer.ID
	st    store.Store
	ownS  bool       // st was opened by the node, which closes it
	shard *shardPart // the ingest side of a keyspace-sharded layer (Config.Shard)
	ds    *dspebble.Datastore
	host  host.Host // nil without libp2p
	hc    *http.Client
	// policy is where the node may connect: publishers over HTTP and
	// libp2p, and the frozen indexers of handoffs.
	policy *netpolicy.Policy

	ing    *ingest.Ingester
	pace   *pace.Pacer // nil unless Config.QueriesFirst
	recv   *announce.Receiver
	gossip *announce.Gossip // nil without libp2p
	mon    *freeze.Monitor
	fr     *freeze.Freezer
	hand   *handoff.Receiver
	adm    *handoff.Node
	srv    []served

	running   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// served is one HTTP listener with its server.
type served struct {
	name string
	ln   net.Listener
	srv  *http.Server
}

// New opens the data directory and makes every part of the node over the
// listeners lns. It starts nothing but the libp2p host's listener. On
// error it has closed what it opened, the listeners included, and the
// error names the part that failed (a bad Config field, a data directory
// another process holds, a bad key file, a busy p2p port).
func New(ctx context.Context, cfg Config, lns Listeners) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FreezeAt == 0 {
		cfg.FreezeAt = DefaultConfig().FreezeAt
	}
	n := &Node{cfg: cfg, log: cfg.Logger}
	err := cfg.Validate()
	if err == nil {
		err = n.open(ctx, lns)
	}
	if err != nil {
		for _, ln := range []net.Listener{lns.Find, lns.Ingest, lns.Admin} {
			if ln != nil {
				ln.Close()
			}
		}
		if cerr := n.Close(); cerr != nil {
			n.log.Warn("closing after a failed start", "err", cerr)
		}
		return nil, err
	}
	return n, nil
}

// open makes every part of n. If it fails, the parts made so far are set
// in n: the caller closes n (New does).
func (n *Node) open(ctx context.Context, lns Listeners) (err error) {
	cfg, log := n.cfg, n.log
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if n.key, err = loadOrCreateKey(filepath.Join(cfg.Dir, KeyFile)); err != nil {
		return err
	}
	if n.id, err = peer.IDFromPrivateKey(n.key); err != nil {
		return err
	}
	if cfg.QueriesFirst && cfg.Shard == nil {
		// An ingest node of a sharded layer answers no lookups: its
		// ingest has nothing to yield to.
		n.pace = pace.New(pace.Config{})
	}
	if cfg.Shard != nil {
		if err := n.openShard(cfg); err != nil {
			return err
		}
	} else if cfg.Index != nil {
		n.st = cfg.Index
	} else {
		if n.st, err = openStore(cfg.Store, filepath.Join(cfg.Dir, indexDir), cfg, n.pace, log); err != nil {
			return lockHint(err)
		}
		n.ownS = true
	}
	ds := filepath.Join(cfg.Dir, stateDir)
	if n.ds, err = openState(ctx, cfg.Dir, cfg.DiskBudget, log); err != nil {
		return lockHint(err)
	}
	if n.ownS && cfg.Store == "memory" {
		// The index did not survive the last stop, but the walk state
		// did: without this, the node would take every publisher it
		// walked for up to date and never index it again. The
		// assignments (the handoff registry) are kept, so an assigned
		// publisher is walked again from the start of its chain.
		dropped, err := ingest.DropWalkState(ctx, n.ds)
		if err != nil {
			return fmt.Errorf("state %s: memory store: %w", ds, err)
		}
		if dropped > 0 {
			log.Warn("memory store: the index of the last run is gone; dropped the walk state of its publishers, which are walked again from the start",
				"publishers", dropped)
		}
	}
	if n.policy, err = dialPolicy(cfg.AllowPrivateAddrs); err != nil {
		return err
	}
	if cfg.P2P != "" {
		n.host, err = libp2p.New(
			libp2p.Identity(n.key),
			libp2p.ListenAddrStrings(cfg.P2P),
			libp2p.DisableRelay(), // no bootstrap, mDNS or NAT port mapping either: none is on by default
			// libp2p's metrics would go to Prometheus's default registry,
			// a global of the embedding program (its event bus registers
			// there even with metrics disabled): Config.P2PMetrics, or a
			// registry of the host's own, takes them, and a node
			// registers nothing globally.
			libp2p.PrometheusRegisterer(p2pMetrics(cfg.P2PMetrics)),
			libp2p.ConnectionGater(ipnisync.NewGater(n.policy)),
		)
		if err != nil {
			return fmt.Errorf("libp2p host on %s: %w", cfg.P2P, err)
		}
	}
	// One client for every publisher: dials through the policy (it also
	// asks for no gzip, which ipnisync does itself) and follows no
	// redirect.
	n.hc = n.policy.Client()

	ingOpts := []ingest.Option{
		ingest.WithLogger(log),
		ingest.WithHooks(cfg.Hooks.Ingest),
		ingest.WithFrozen(n.ingestFrozen),
	}
	if n.pace != nil {
		ingOpts = append(ingOpts, ingest.WithPacer(n.pace))
	}
	n.ing, err = ingest.New(n.st, n.ds, n.syncer, ingOpts...)
	if err != nil {
		return err
	}
	// Announces go straight to the ingester, which says what each costs
	// (free for a publisher already queued, per publisher once verified,
	// per source before) and refuses, while the request is open, those
	// it has no room for.
	n.recv, err = announce.NewReceiver(announce.WithAllow(n.allowed), announce.WithLogger(log),
		announce.WithSink(n.ing.Sink(nil)), // WithAllow asked n.accepts already
		announce.WithSourceRate(cfg.AnnounceRate, netlimit.NewPublisherBurst(cfg.AnnounceRate)),
		announce.WithPublisherRate(cfg.AnnounceRate, netlimit.Burst(cfg.AnnounceRate)),
		announce.WithSourceRateExempt(cfg.AnnounceRateExempt...))
	if err != nil {
		return err
	}
	if n.host != nil {
		network := strings.TrimPrefix(cfg.Topic, "/indexer/ingest/")
		if n.gossip, err = announce.NewGossip(n.host, n.recv, announce.WithNetwork(network), announce.WithGossipLogger(log),
			announce.WithPeerRate(cfg.GossipPeerRate, netlimit.Burst(cfg.GossipPeerRate))); err != nil {
			return err
		}
	}
	reg, err := handoff.NewRegistry(n.ds)
	if err != nil {
		return err
	}
	n.hand, err = handoff.NewReceiver(handoff.DurableRecords(n.st), handoff.FromIngester(n.ing), reg,
		handoff.WithFrozen(n.frozen), handoff.WithLogger(log), handoff.WithDialPolicy(n.policy),
		handoffOption(cfg.HandoffFrom, cfg.HandoffFromFile)) // nil: any FrozenURL
	if err != nil {
		return err
	}
	// Watch every directory the node writes; the memory store has none.
	watched := []string{cfg.Dir, filepath.Join(cfg.Dir, stateDir)}
	if n.ownS && cfg.Store != "memory" {
		watched = append(watched, filepath.Join(cfg.Dir, indexDir))
	}
	monOpts := []freeze.MonitorOption{
		freeze.WithFreezeAtPercent(cfg.FreezeAt),
		freeze.WithLogger(log),
	}
	if cfg.Hooks.DiskCheck != nil {
		monOpts = append(monOpts, freeze.WithOnCheck(cfg.Hooks.DiskCheck))
	}
	if cfg.DiskBudget > 0 {
		monOpts = append(monOpts, freeze.WithDiskReader(freeze.Budget(cfg.Dir, uint64(cfg.DiskBudget))),
			freeze.WithPollIntervals(budgetMinInterval, budgetMaxInterval), freeze.WithRetryInterval(budgetMinInterval))
	}
	n.mon, err = freeze.NewMonitor(watched, monOpts...)
	if err != nil {
		return err
	}
	frOpts := []freeze.Option{
		// Each flushes the store before the freezer records the step
		// done: no chain replays a snapshot (Config.IndexNoWAL).
		freeze.WithOnFreeze(handoff.OnFreeze(n.st, log)),
		freeze.WithOnUnfreeze(handoff.OnUnfreeze(n.st, n.ing, log)),
		freeze.WithUnfreezeOnStart(cfg.UnfreezeOnStart),
	}
	if cfg.Hooks.FreezeState != nil {
		frOpts = append(frOpts, freeze.WithOnStateChange(cfg.Hooks.FreezeState))
	}
	n.fr, err = freeze.Open(ctx, freeze.FileStore(filepath.Join(cfg.Dir, freezeFile)), n.mon, frOpts...)
	if err != nil {
		return err
	}
	if cfg.Hooks.FreezeState != nil {
		cfg.Hooks.FreezeState(n.fr.State(), n.fr.FrozenAt())
	}
	if n.adm, err = handoff.NewNode(handoff.NodeConfig{
		ID: n.id, Store: n.st, Ingester: n.ing, Receiver: n.hand, Freezer: n.fr, Usage: n.mon.Usage,
		UseAssigner: cfg.UseAssigner,
	}); err != nil {
		return err
	}
	return n.serve(lns)
}

// serve makes the HTTP server of each listener given.
func (n *Node) serve(lns Listeners) error {
	ingestMux := http.NewServeMux()
	ingestMux.Handle("/", withBodyDeadline(n.recv, AnnounceBodyTimeout)) // PUT /announce, PUT /ingest/announce
	ingestMux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK") })
	backend, err := find.NewStoreBackend(n.st)
	if err != nil {
		return err
	}
	var findAPI http.Handler
	hopts := []find.HandlerOption{find.WithLogger(n.log)}
	if n.cfg.AnswerCache != 0 {
		hopts = append(hopts, find.WithAnswerCache(max(n.cfg.AnswerCache, 0)))
	}
	if findAPI, err = find.NewHandler(backend, hopts...); err != nil {
		return err
	}
	var routingAPI http.Handler
	routingAPI, err = routing.New(backend, routing.WithLogger(n.log))
	if err != nil {
		return err
	}
	if n.shard != nil { // no index to look up: see ShardConfig
		findAPI, routingAPI = n.shard.noIndex(findAPI), n.shard.noIndex(routingAPI)
	}
	if n.pace != nil {
		findAPI, routingAPI = n.pace.Lookups(findAPI), n.pace.Lookups(routingAPI)
	}
	if n.cfg.Hooks.Find != nil {
		findAPI = n.cfg.Hooks.Find(findAPI)
		routingAPI = n.cfg.Hooks.Find(routingAPI)
	}
	// The find listener: the lookups above (seen by Hooks.Find) at the
	// root and under routing.Prefix, and the conventions and the sampling
	// API beside them, all in one mux: a lookup is matched once, not once
	// per level. /health and /stats are mounted without a method so that
	// their handler answers OPTIONS preflights.
	findListener := http.NewServeMux()
	findListener.Handle("/", findAPI)
	findListener.Handle(routing.Prefix, routingAPI)
	conv := health.NewHandler(health.Config{ID: n.id, Frozen: n.fr.Frozen, Store: n.st, Logger: n.log})
	findListener.Handle("/health", conv)
	findListener.Handle("/stats", conv)
	sampleAPI, err := sample.NewHandler(n.st, sample.WithLogger(n.log))
	if err != nil {
		return err
	}
	if n.shard != nil {
		findListener.Handle(sample.Prefix, n.shard.noIndex(sampleAPI))
	} else {
		findListener.Handle(sample.Prefix, sampleAPI)
	}
	if h := n.shardHandler(); h != nil {
		findListener.Handle(keyspace.PathStatus, h)
	}
	adm, err := admin.NewHandler(n.adm, admin.WithToken(n.cfg.AdminToken), admin.WithAllowedHosts(n.cfg.AdminHosts...), admin.WithLogger(n.log))
	if err != nil {
		return err
	}
	for _, s := range []served{{"find", lns.Find, nil}, {"ingest", lns.Ingest, nil}, {"admin", lns.Admin, nil}} {
		if s.ln == nil {
			continue
		}
		switch s.name {
		case "find":
			s.srv = httpserve.NewServer(lookupsFirst(findAPI, findListener), n.log)
		case "ingest":
			s.srv = httpserve.NewServer(ingestMux, n.log)
		default:
			s.srv = httpserve.NewServer(adm, n.log)
		}
		n.srv = append(n.srv, s)
	}
	return nil
}

// lookupsFirst hands a single-key lookup (GET /multihash/{key}, GET
// /cid/{key}) to find without matching it in mux, which would hand it
// there too: a lookup is most of what the listener serves, and matching
// it (cleaning the path, walking the patterns, allocating) is work the
// answer does not need. A path with another '/' after the prefix goes to
// mux, which cleans it as before.
func lookupsFirst(find, mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		key, ok := strings.CutPrefix(p, "/multihash/")
		if !ok {
			key, ok = strings.CutPrefix(p, "/cid/")
		}
		if ok && key != "" && !strings.Contains(key, "/") {
			find.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// ID returns the node's peer ID.
func (n *Node) ID() peer.ID { return n.id }

// Addrs reports where the node listens.
func (n *Node) Addrs() Addrs {
	a := Addrs{ID: n.id}
	for _, s := range n.srv {
		addr := s.ln.Addr().String()
		switch s.name {
		case "find":
			a.Find = addr
		case "ingest":
			a.Ingest = addr
		case "admin":
			a.Admin = addr
		}
	}
	if n.host != nil {
		suffix, _ := multiaddr.NewComponent("p2p", n.id.String())
		for _, m := range n.host.Addrs() {
			a.P2P = append(a.P2P, m.Encapsulate(suffix))
		}
	}
	return a
}

// Store returns the node's index store.
func (n *Node) Store() store.Store { return n.st }

// Ingester returns the node's ingester (its per-publisher status, a walk
// to queue).
func (n *Node) Ingester() *ingest.Ingester { return n.ing }

// AnnounceStats returns the announce receiver's counters.
func (n *Node) AnnounceStats() announce.Stats { return n.recv.Stats() }

// UnverifiedStats returns the ingester's counts of publishers that never
// verified: held, checking, refused, evicted, failed.
func (n *Node) UnverifiedStats() ingest.UnverifiedStats { return n.ing.Unverified() }

// Pacer returns the pacer that lets the node's lookups go first while it
// ingests (Config.QueriesFirst), for its Stats; nil when that is off.
func (n *Node) Pacer() *pace.Pacer { return n.pace }

// Frozen reports whether the node is frozen: it takes no new publishers.
func (n *Node) Frozen() bool { return n.fr != nil && n.fr.Frozen() }

// Close releases what New opened, in reverse order, and the listeners if
// Run did not serve them. Call it after Run has returned; it is
// idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if !n.running.Swap(true) { // Run never ran, and will not
			for _, s := range n.srv {
				s.ln.Close()
			}
		}
		if n.recv != nil {
			errs = append(errs, n.recv.Close())
		}
		if n.host != nil {
			errs = append(errs, n.host.Close())
		}
		if n.hc != nil {
			n.hc.CloseIdleConnections()
		}
		if n.st != nil && n.ownS {
			errs = append(errs, n.st.Close())
		}
		if n.shard != nil {
			errs = append(errs, n.shard.close())
		}
		if n.ds != nil {
			errs = append(errs, n.ds.Close())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// loadOrCreateKey reads the node's libp2p key from path, creating an
// Ed25519 key there (mode 0600) on first start.
func loadOrCreateKey(path string) (crypto.PrivKey, error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		k, err := crypto.UnmarshalPrivateKey(data)
		if err != nil {
			return nil, fmt.Errorf("identity key %s: %w", path, err)
		}
		return k, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("identity key: %w", err)
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, err
	}
	data, err = crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	return k, nil
}

// lockHint adds to the error of a store that another process holds
// locked what it most likely means.
func lockHint(err error) error {
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w (locked: is another node running on this -dir?)", err)
	}
	return err
}

// openStore opens the index store of kind in dir; on error the store is a
// nil interface (not a typed nil pointer that Close would dereference). A
// Pebble store has cfg's cache and memtable sizes, is sized to a disk
// budget ([pebble.WithDiskBudget]), has no write-ahead log with
// IndexNoWAL ([pebble.WithoutWAL]), gathers sorted runs with
// IndexRunSize ([pebble.WithSortedRuns]), and if new is keyed on digest
// prefixes unless IndexFullKeys ([pebble.WithDigestPrefixKeys]); Pebble
// and LevelDB keep populations only with IndexSampling. With pc, a
// Pebble store runs as many compactions at once as pc allows, on threads
// pc lowers.
func openStore(kind, dir string, cfg Config, pc *pace.Pacer, log *slog.Logger) (store.Store, error) {
	budget, noWAL, fullKeys := cfg.DiskBudget, cfg.IndexNoWAL, cfg.IndexFullKeys
	var st store.Store
	var err error
	switch kind {
	case "memory":
		return memory.New(), nil
	case "leveldb":
		var s *leveldb.Store
		var lopts []leveldb.Option
		if !cfg.IndexSampling {
			lopts = append(lopts, leveldb.WithoutPopulations())
		}
		if cfg.IndexLookupCache != 0 {
			lopts = append(lopts, leveldb.WithLookupCache(max(cfg.IndexLookupCache, 0)))
		}
		if s, err = leveldb.Open(dir, lopts...); err == nil {
			st = s
		}
	default:
		var s *pebble.Store
		opts := []pebble.Option{pebble.WithLogger(log)}
		if cfg.IndexCacheSize > 0 {
			opts = append(opts, pebble.WithCacheSize(cfg.IndexCacheSize))
		}
		if cfg.IndexMemTableSize > 0 {
			opts = append(opts, pebble.WithMemTableSize(uint64(cfg.IndexMemTableSize)))
		}
		if cfg.IndexLookupCache != 0 {
			opts = append(opts, pebble.WithLookupCache(max(cfg.IndexLookupCache, 0)))
		}
		if budget > 0 {
			// Memtables, logs and MANIFEST sized to the budget: with
			// Pebble's defaults its empty logs alone would spend a
			// budget of a few MiB.
			opts = append(opts, pebble.WithDiskBudget(budget))
		}
		if noWAL {
			opts = append(opts, pebble.WithoutWAL())
		}
		if runs := freeze.SplitBudget(budget, cfg.IndexRunSize).RunSize; runs > 0 {
			opts = append(opts, pebble.WithSortedRuns(runs))
		}
		if !fullKeys {
			opts = append(opts, pebble.WithDigestPrefixKeys())
		}
		if !cfg.IndexSampling {
			opts = append(opts, pebble.WithoutPopulations())
		}
		if pc != nil {
			opts = append(opts, pebble.WithCompactionLimit(pc.CompactionLimit), pebble.WithCompactionThreads(pc.Background))
		}
		if s, err = pebble.Open(dir, opts...); err == nil {
			st = s
		}
	}
	if err != nil {
		return nil, fmt.Errorf("index store %s: %w", dir, err)
	}
	return st, nil
}

// dialPolicy is where the node's clients may dial: public addresses only
// or, with Config.AllowPrivateAddrs, a private pool's too (announces and
// admin requests name those addresses: the program warns of it).
func dialPolicy(allowPrivate bool) (*netpolicy.Policy, error) {
	if !allowPrivate {
		return netpolicy.New()
	}
	return netpolicy.New(netpolicy.AllowPrivate())
}

// syncer is the ingester's SyncerFunc: plain HTTP when the publisher has
// an HTTP address, libp2p otherwise.
func (n *Node) syncer(publisher peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
	ai := peer.AddrInfo{ID: publisher, Addrs: addrs}
	opts := []ipnisync.Option{ipnisync.WithLogger(n.log)}
	if slices.ContainsFunc(addrs, isHTTP) {
		return ipnisync.New(ai, append(opts, ipnisync.WithHTTPClient(n.hc))...)
	}
	if n.host == nil {
		return nil, fmt.Errorf("publisher %s has no HTTP address among %v and libp2p is disabled", publisher, addrs)
	}
	return ipnisync.New(ai, append(opts, ipnisync.WithLibp2p(n.host))...)
}

func isHTTP(a multiaddr.Multiaddr) bool {
	for _, c := range a {
		if c.Protocol().Code == multiaddr.P_HTTP || c.Protocol().Code == multiaddr.P_HTTPS {
			return true
		}
	}
	return false
}

func (n *Node) frozen() bool { return n.Frozen() }

// ingestFrozen reports whether ingestion must store no new multihashes:
// once the freeze snapshot is done (Frozen), and while unfreezing. While
// the snapshot runs (Freezing) ads are still applied in full, so that no
// ad applied metadata-only can end up at or before a FrozenAt: at worst a
// handoff receiver ingests again an ad the frozen node indexed.
func (n *Node) ingestFrozen() bool {
	if n.fr == nil {
		return false
	}
	s := n.fr.State()
	return s == freeze.Frozen || s == freeze.Unfreezing
}

// allowed is the announce receiver's policy: every publisher, or in
// assigner mode the assigned ones.
func (n *Node) allowed(publisher peer.ID) bool {
	ok, err := n.accepts(context.Background(), publisher)
	if err != nil {
		n.log.Warn("reading assignment", "publisher", publisher.String(), "err", err)
	}
	return ok
}

// accepts is [handoff.Node.Accepts].
func (n *Node) accepts(ctx context.Context, publisher peer.ID) (bool, error) {
	return n.adm.Accepts(ctx, publisher)
}

// p2pMetrics is reg, or a registry of its own when reg is nil.
func p2pMetrics(reg prometheus.Registerer) prometheus.Registerer {
	if reg == nil {
		return prometheus.NewRegistry()
	}
	return reg
}
