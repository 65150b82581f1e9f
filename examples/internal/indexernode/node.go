package indexernode

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ipfs/go-cid"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/cli"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
)

// KeyFile is the node's identity inside its data directory (-dir): the
// libp2p private key, protobuf-encoded, mode 0600, created on first start.
const KeyFile = "identity.key"

// Other paths inside the data directory.
const (
	indexDir     = "index"       // the index store (pebble or leveldb)
	datastoreDir = "datastore"   // go-ds-leveldb: walker state, assignments
	freezeFile   = "freeze.json" // freeze state (freeze.FileStore)
)

// node is an indexer node's parts, opened and connected; [node.run] runs
// them and [node.Close] releases them.
type node struct {
	cfg  Config
	log  *slog.Logger
	key  crypto.PrivKey
	id   peer.ID
	st   store.Store
	ds   *dsleveldb.Datastore
	host host.Host // nil without libp2p
	hc   *http.Client
	// policy is where the node may connect: publishers over HTTP and
	// libp2p, and the frozen indexers of handoffs.
	policy *netpolicy.Policy

	ing    *ingest.Ingester
	recv   *announce.Receiver
	gossip *announce.Gossip // nil without libp2p
	mon    *freeze.Monitor
	fr     *freeze.Freezer
	hand   *handoff.Receiver
	met    *metrics
}

// openNode opens the data directory and makes every part of the node. It
// starts nothing but the libp2p host's listener. On error it has closed
// what it opened, and the error names the part that failed (a data
// directory another process holds, a bad key file, a busy p2p port).
func openNode(ctx context.Context, cfg Config, log *slog.Logger, met *metrics) (*node, error) {
	n := &node{cfg: cfg, log: log, met: met}
	if err := n.open(ctx); err != nil {
		if cerr := n.Close(); cerr != nil {
			log.Warn("closing after a failed start", "err", cerr)
		}
		return nil, err
	}
	return n, nil
}

// open makes every part of n. If it fails, the parts made so far are set
// in n: the caller closes n (openNode does).
func (n *node) open(ctx context.Context) (err error) {
	cfg, log, met := n.cfg, n.log, n.met
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if n.key, err = loadOrCreateKey(filepath.Join(cfg.Dir, KeyFile)); err != nil {
		return err
	}
	if n.id, err = peer.IDFromPrivateKey(n.key); err != nil {
		return err
	}
	if n.st, err = openStore(cfg.Store, filepath.Join(cfg.Dir, indexDir), log); err != nil {
		return lockHint(err)
	}
	ds := filepath.Join(cfg.Dir, datastoreDir)
	if n.ds, err = dsleveldb.NewDatastore(ds, nil); err != nil {
		return lockHint(fmt.Errorf("datastore %s: %w", ds, err))
	}
	if n.policy, err = cli.DialPolicy(cfg.AllowPrivateAddrs, log, "publishers and frozen indexers"); err != nil {
		return err
	}
	if cfg.P2P != "" {
		n.host, err = libp2p.New(
			libp2p.Identity(n.key),
			libp2p.ListenAddrStrings(cfg.P2P),
			libp2p.DisableRelay(), // no bootstrap, mDNS or NAT port mapping either: none is on by default
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

	n.ing, err = ingest.New(n.st, n.ds, n.syncer,
		ingest.WithLogger(log),
		ingest.WithHooks(met.ingestHooks()),
		ingest.WithFrozen(n.ingestFrozen),
	)
	if err != nil {
		return err
	}
	exempt, err := cli.ParsePrefixes(cfg.AnnounceRateExempt)
	if err != nil {
		return fmt.Errorf("-announce-rate-exempt: %w", err)
	}
	n.recv, err = announce.NewReceiver(announce.WithAllow(n.allowed), announce.WithLogger(log),
		announce.WithSourceRate(cfg.AnnounceRate, cli.RateBurst(cfg.AnnounceRate)),
		announce.WithSourceRateExempt(exempt...))
	if err != nil {
		return err
	}
	if n.host != nil {
		network := strings.TrimPrefix(cfg.Topic, "/indexer/ingest/")
		if n.gossip, err = announce.NewGossip(n.host, n.recv, announce.WithNetwork(network), announce.WithGossipLogger(log),
			announce.WithPeerRate(cfg.GossipPeerRate, cli.RateBurst(cfg.GossipPeerRate))); err != nil {
			return err
		}
	}
	reg, err := handoff.NewRegistry(n.ds)
	if err != nil {
		return err
	}
	n.hand, err = handoff.NewReceiver(n.st, handoff.FromIngester(n.ing), reg,
		handoff.WithFrozen(n.frozen), handoff.WithLogger(log), handoff.WithDialPolicy(n.policy),
		handoffOption(cfg.HandoffFrom, cfg.HandoffFromFile)) // nil: any FrozenURL
	if err != nil {
		return err
	}
	// Watch every directory the node writes; the memory store has none.
	watched := []string{cfg.Dir, filepath.Join(cfg.Dir, datastoreDir)}
	if cfg.Store != "memory" {
		watched = append(watched, filepath.Join(cfg.Dir, indexDir))
	}
	monOpts := []freeze.MonitorOption{
		freeze.WithFreezeAtPercent(cfg.FreezeAt),
		freeze.WithLogger(log),
		freeze.WithOnCheck(met.diskCheck),
	}
	if cfg.DiskBudget > 0 {
		monOpts = append(monOpts, freeze.WithDiskReader(budgetReader{dir: cfg.Dir, budget: uint64(cfg.DiskBudget)}),
			freeze.WithPollIntervals(budgetMinInterval, budgetMaxInterval), freeze.WithRetryInterval(budgetMinInterval))
	}
	n.mon, err = freeze.NewMonitor(watched, monOpts...)
	if err != nil {
		return err
	}
	n.fr, err = freeze.Open(ctx, freeze.FileStore(filepath.Join(cfg.Dir, freezeFile)), n.mon,
		freeze.WithOnFreeze(n.onFreeze),
		freeze.WithOnUnfreeze(n.onUnfreeze),
		freeze.WithOnStateChange(met.freezeState),
		freeze.WithUnfreezeOnStart(cfg.UnfreezeOnStart),
	)
	if err != nil {
		return err
	}
	met.freezeState(n.fr.State(), n.fr.FrozenAt())
	return nil
}

// Close releases what openNode opened, in reverse order. Call it after run
// has returned.
func (n *node) Close() error {
	var errs []error
	if n.recv != nil {
		errs = append(errs, n.recv.Close())
	}
	if n.host != nil {
		errs = append(errs, n.host.Close())
	}
	if n.hc != nil {
		n.hc.CloseIdleConnections()
	}
	if n.st != nil {
		errs = append(errs, n.st.Close())
	}
	if n.ds != nil {
		errs = append(errs, n.ds.Close())
	}
	return errors.Join(errs...)
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

// openStore opens the index store; on error the store is a nil interface
// (not a typed nil pointer that Close would dereference).
func openStore(kind, dir string, log *slog.Logger) (store.Store, error) {
	var st store.Store
	var err error
	switch kind {
	case "memory":
		return memory.New(), nil
	case "leveldb":
		var s *leveldb.Store
		if s, err = leveldb.Open(dir); err == nil {
			st = s
		}
	default:
		var s *pebble.Store
		if s, err = pebble.Open(dir, pebble.WithLogger(log)); err == nil {
			st = s
		}
	}
	if err != nil {
		return nil, fmt.Errorf("index store %s: %w", dir, err)
	}
	return st, nil
}

// syncer is the ingester's SyncerFunc: plain HTTP when the publisher has
// an HTTP address, libp2p otherwise.
func (n *node) syncer(publisher peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
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

// frozen reports whether the node is frozen: it takes no new publishers.
func (n *node) frozen() bool { return n.fr != nil && n.fr.Frozen() }

// ingestFrozen reports whether ingestion must store no new multihashes:
// once the freeze snapshot is done (Frozen), and while unfreezing. While
// the snapshot runs (Freezing) ads are still applied in full, so that no
// ad applied metadata-only can end up at or before a FrozenAt: at worst a
// handoff receiver ingests again an ad the frozen node indexed.
func (n *node) ingestFrozen() bool {
	if n.fr == nil {
		return false
	}
	s := n.fr.State()
	return s == freeze.Frozen || s == freeze.Unfreezing
}

// allowed is the announce policy: every publisher, or in assigner mode the
// assigned ones.
func (n *node) allowed(publisher peer.ID) bool {
	if !n.cfg.UseAssigner {
		return true
	}
	_, ok, err := n.hand.Registry().Assigned(context.Background(), publisher)
	if err != nil {
		n.log.Warn("reading assignment", "publisher", publisher.String(), "err", err)
	}
	return ok
}

// feedAnnounces hands every accepted announce to the ingester until ctx
// ends.
func (n *node) feedAnnounces(ctx context.Context) error {
	for {
		a, err := n.recv.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("announces: %w", err)
		}
		if !n.allowed(a.Publisher) { // unassigned since it was received
			continue
		}
		if err := n.ing.Announce(a.Publisher, a.Addrs, a.Cid); err != nil {
			n.log.Warn("announce refused", "publisher", a.Publisher.String(), "cid", a.Cid.String(), "err", err)
			n.recv.Forget(a.Publisher, a.Cid)
			continue
		}
		n.log.Debug("announce", "publisher", a.Publisher.String(), "cid", a.Cid.String(), "source", a.Source.String())
	}
}

// poll runs resync every interval until ctx is done. A failed resync is
// logged and tried again at the next tick.
func (n *node) poll(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := n.resync(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("poll: resync failed", "err", err)
			}
		}
	}
}

// resync queues a walk of every publisher the node follows, each asked for
// its head (at the addresses the ingester persisted): announces sent while
// the node was down are lost, and a publisher that has stopped announcing
// would otherwise stay behind until its next announce. In assigner mode
// the node follows its assignments (frozen or not: a frozen node still
// applies removals and metadata updates), otherwise the publishers of its
// provider records. A publisher whose head has not moved costs one head
// request.
func (n *node) resync(ctx context.Context) error {
	var pubs []peer.ID
	if n.cfg.UseAssigner {
		as, err := n.hand.Registry().Assignments(ctx)
		if err != nil {
			return fmt.Errorf("resync: %w", err)
		}
		for _, a := range as {
			pubs = append(pubs, a.Publisher)
		}
	} else {
		for info, err := range n.st.Providers(ctx) {
			if err != nil {
				return fmt.Errorf("resync: %w", err)
			}
			if id := info.Publisher.ID; id != "" && !slices.Contains(pubs, id) {
				pubs = append(pubs, id)
			}
		}
	}
	for _, pub := range pubs {
		if err := n.ing.Announce(pub, nil, cid.Undef); err != nil {
			n.log.Warn("resync: cannot queue a walk", "publisher", pub.String(), "err", err)
		}
	}
	if len(pubs) > 0 {
		n.log.Info("resync: asking every publisher followed for its head", "publishers", len(pubs))
	}
	return nil
}

// onFreeze snapshots every provider record at the freeze
// ([handoff.Snapshot]): FrozenAt = LastAdvertisement, FrozenAtTime = at.
func (n *node) onFreeze(ctx context.Context, at time.Time) error {
	if err := handoff.Snapshot(ctx, n.st, at); err != nil {
		return err
	}
	n.log.Info("freeze snapshot done", "frozen_at", at)
	return nil
}

// onUnfreeze resets each publisher's walker to its providers' FrozenAt as
// a handoff does ([handoff.ResumePoints], [handoff.Resume]), so that the
// ads walked while frozen are applied again with their entries; it clears
// FrozenAt and queues a walk of each publisher.
func (n *node) onUnfreeze(ctx context.Context, _ time.Time) error {
	byPub := make(map[peer.ID][]store.ProviderInfo)
	addrs := make(map[peer.ID][]multiaddr.Multiaddr)
	var records []store.ProviderInfo
	for info, err := range n.st.Providers(ctx) {
		if err != nil {
			return fmt.Errorf("unfreeze: %w", err)
		}
		if !info.FrozenAt.Defined() {
			continue
		}
		records = append(records, info)
		pub := info.Publisher.ID
		if pub == "" {
			continue
		}
		byPub[pub] = append(byPub[pub], info)
		if len(info.Publisher.Addrs) > 0 {
			addrs[pub] = info.Publisher.Addrs
		}
	}
	ing := handoff.FromIngester(n.ing)
	for pub, recs := range byPub {
		points, _ := handoff.ResumePoints(recs)
		if err := handoff.Resume(ctx, ing, pub, points); err != nil {
			return fmt.Errorf("unfreeze: %w", err)
		}
		n.log.Info("unfreeze: publisher resumes from its frozen point", "publisher", pub.String(), "cid", points[len(points)-1].String())
	}
	for _, info := range records {
		info.LastAdvertisement = info.FrozenAt
		info.FrozenAt, info.FrozenAtTime = cid.Undef, time.Time{}
		if err := n.st.PutProvider(ctx, info); err != nil {
			return fmt.Errorf("unfreeze: %w", err)
		}
	}
	for pub := range byPub {
		if err := n.ing.Announce(pub, addrs[pub], cid.Undef); err != nil {
			n.log.Warn("unfreeze: cannot queue a walk", "publisher", pub.String(), "err", err)
		}
	}
	return nil
}

// logProgress logs, every interval, the progress of each publisher whose
// figures changed.
func (n *node) logProgress(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := make(map[peer.ID]ingest.Status)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, s := range n.ing.Statuses() {
			p := last[s.Publisher]
			if p.AdsWalked == s.AdsWalked && p.AdsApplied == s.AdsApplied && p.EntriesIndexed == s.EntriesIndexed && p.Failures == s.Failures {
				continue
			}
			last[s.Publisher] = s
			attrs := []any{"publisher", s.Publisher.String(), "ads_walked", s.AdsWalked, "ads_applied", s.AdsApplied,
				"multihashes_indexed", s.EntriesIndexed, "pending", s.Pending, "walking", s.Walking, "frozen", n.ingestFrozen()}
			if s.LastHead.Defined() {
				attrs = append(attrs, "cid", s.LastHead.String())
			}
			if s.LastError != nil {
				attrs = append(attrs, "failures", s.Failures, "last_error", s.LastError.Error())
			}
			n.log.Info("progress", attrs...)
		}
	}
}
