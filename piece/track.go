package piece

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// Tracker keeps a [Store] up to date with the pieces of every provider it
// hears of: it learns providers, their publishers and heads, walks each
// publisher's advertisement chain with the ingest walker, and turns every
// advertisement into (piece, payload CIDs) offers and status counters.
//
// # Learning providers
//
// Three sources feed it, all optional:
//
//   - the IPNI /providers endpoint ([WithProvidersURL]), read at start and
//     every poll interval ([WithPollInterval]). Each entry is keyed by its
//     provider (AddrInfo.ID) — the ID ads are signed for and payloads are
//     stored under — and walked from its Publisher (or, without one, from
//     the provider's own addresses) starting at LastAdvertisement. Only
//     HTTP publishers can be walked (multiaddrs with /http or /https,
//     optionally /tls and /http-path); for the others the provider's status
//     text says "unsupported protocol" and nothing is fetched. The
//     addresses are the records' authors' choice: requests to publishers
//     go only where the dial policy allows ([WithDialPolicy]: public
//     addresses by default) and follow no redirect, while the /providers
//     endpoint, the operator's choice, is read with [WithHTTPClient]'s
//     client.
//   - announces: [Tracker.AnnounceHandler] serves PUT /announce and PUT
//     /ingest/announce (CBOR or JSON, as IPNI publishers send them), and
//     [Tracker.Announce] takes them from any other source.
//   - publishers given by configuration ([WithPublishers]), asked for their
//     head every poll interval.
//
// # Walking
//
// Walks are those of the ingest package, run by an ingest.Ingester with an
// Applier of this package (ingest.WithApplier), unordered
// (ingest.WithUnordered): pieces are immutable and removals are ignored,
// so order does not matter, and each advertisement is applied as it is
// fetched, newest first, from the head down to the last walked head. A
// provider's newest pieces are answered while the rest of its chain is
// still being fetched, and nothing collected waits on disk. Every block is
// fetched over ipnisync HTTP and checked against its CID, every head's and
// advertisement's signature is verified (by the provider or the
// publisher). Publishers are walked concurrently, at most
// ingest.WithWorkers at once, one walk each; a walk's turn is bounded to
// [DefaultWalkSlotAds] advertisements or [DefaultWalkSlotTime]
// (ingest.WithSlot), after which the publisher goes behind the others:
// the one-step-at-a-time scheduling of the piece-indexer design, in steps
// of a few dozen advertisements. Each request is bounded by
// ingest.WithRequestTimeout and rate-limited per publisher
// (ingest.WithRequestRate); a publisher whose walk fails waits an
// exponential backoff (ingest.WithBackoff) before it is tried again. So a
// slow, hanging or broken publisher holds at most one walk slot for one
// request timeout at a time, and never blocks the others or spins on its
// bad advertisement. An advertisement that cannot be fetched stalls the
// walk there until the backoff has passed; one that does not verify ends
// the walk at it (ingest's unordered walks).
//
// # Walk state and several Trackers
//
// Per publisher the walk state is the head / tail / lastHead position of
// the piece-indexer design, moved past each advertisement as it is
// applied. Where it lives depends on the Store:
//
//   - a Store that keeps walks ([Walks]: piece/memory and piece/redis do)
//     keeps it. Each step is one StepWalk that moves the position and adds
//     the advertisement's counters together, conditioned on the position
//     it starts from, so counters are exact however a process stops: a
//     process killed after offering an advertisement's payloads
//     (idempotent) and before its step offers them again and counts them
//     once. Several Trackers pointed at one Store (one Redis) share the
//     walks: a Tracker claims a publisher's walk for [DefaultClaimTTL]
//     ([WithClaimTTL]), renewed by each step; the others leave it alone
//     while the claim lasts (asking again every slot time, at no cost to
//     the publisher) and take it over where it stopped once it lapses.
//     Each chain is walked about once, whichever Tracker walks it, and
//     counted once even when two race on it (the loser's step fails and
//     it reads the position again). Claims name the Tracker
//     ([WithClaimOwner]; by default a name kept in its datastore).
//   - otherwise the datastore given to [NewTracker] (go-ds-leveldb on
//     disk) keeps it, and the counters go to the Store as each
//     advertisement is applied, before the position moves: a process
//     killed in between counts that one advertisement again when it
//     resumes.
//
// Either way a restarted Tracker resumes every unfinished walk where it
// stopped. The datastore also keeps each publisher's verified addresses
// and backoff.
//
// # What each advertisement does
//
// An advertisement with entries names its piece in its ContextID or its
// graphsync-filecoinv1 metadata ([PieceOf]); the payload CIDs are those of
// the multihashes of its first entry chunk ([WithEntryChunks]: the first n
// chunks, or all of them; the chunks after them are never requested)
// ([PayloadCID]), of which the k with the smallest [PayloadHash] are
// offered to the Store ([WithSampleSize]): exactly what a bottom-k Store
// keeps, at k writes per advertisement whatever its size.
// IsRm advertisements, and advertisements a newer one removes, are not
// undone: pieces are immutable. Per provider the Store counts
// advertisements walked, advertisements with entries but no piece
// (AdsWithoutPiece), and advertisements whose entries could not be fetched
// (EntriesUnretrievable: 404, a block that does not match its CID, entries
// that are not entries); such an advertisement is skipped and the walk goes
// on. A transient failure (timeout, 5xx, refused connection), or an
// advertisement that cannot be fetched or verified itself, stops the walk
// there until the backoff has passed; it shows in LastError and Text.
//
// # Status
//
// Every status interval ([WithStatusInterval]) the Tracker writes, for each
// provider of each publisher, the publisher's URL (Address), the head of
// the walk in progress (Head) and of the last finished one (LastHead), the
// last walk error (LastError) and a status text ("walking: …", "up to
// date", "walk failed …, retrying at …", "unsupported protocol: …"). Until
// an advertisement names a publisher's provider (a publisher given by
// configuration or an announce), these are written under the publisher's
// own ID, which is the provider's for most deployed publishers. While
// another Tracker on the same Store walks a publisher, this one leaves its
// providers' statuses to that one.
//
// # Lifecycle
//
// [NewTracker] starts nothing. [Tracker.Run] runs everything until its
// context ends and returns after every goroutine it started has stopped
// and the last statuses are written; call it once. [Tracker.Close] closes
// the announce handler. All methods are safe for concurrent use.
type Tracker struct {
	st        Store
	ing       *ingest.Ingester
	recv      *announce.Receiver
	cfg       *trackerConfig
	pubClient *http.Client // every request to a publisher: the dial policy's
	log       *slog.Logger
	// requestTimeout bounds every request the Tracker makes itself: the
	// ingester's (ingest.WithRequestTimeout).
	requestTimeout time.Duration
	sampleSize     int

	// owner names this Tracker in the claims of a Store that keeps walks
	// (WithClaimOwner, else kept in the walk-state datastore, so a restart
	// on it resumes its own claims at once).
	owner string

	mu        sync.Mutex
	elsewhere map[peer.ID]bool // publishers another Tracker walks now
	pubs      map[peer.ID]*trackedPub
	written   map[peer.ID]writtenStatus // last status written per provider
	announced map[peer.ID]cid.Cid       // last head announced from /providers
	lastLog   time.Time
}

// trackedPub is what the Tracker knows of one publisher.
type trackedPub struct {
	providers map[peer.ID]bool
	url       string // first HTTP address
}

// writtenStatus is the part of a provider's status the status loop writes.
type writtenStatus struct {
	address, text, lastError string
	head, lastHead           cid.Cid
}

// NewTracker returns a Tracker that writes into st and keeps walk state in
// ds (whose batches must be atomic, as go-ds-leveldb's are, for a walk to
// survive a crash). It starts nothing: call [Tracker.Run].
func NewTracker(st Store, ds datastore.Batching, opts ...TrackerOption) (*Tracker, error) {
	var err error
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOption)
	}
	if ds == nil {
		return nil, fmt.Errorf("%w: nil datastore", ErrInvalidOption)
	}
	cfg, err := newTrackerConfig(opts)
	if err != nil {
		return nil, err
	}
	t := &Tracker{
		st:         st,
		cfg:        cfg,
		pubClient:  cfg.policy.Client(),
		log:        cfg.logger,
		sampleSize: cfg.sampleSize,
		pubs:       make(map[peer.ID]*trackedPub),
		elsewhere:  make(map[peer.ID]bool),
		written:    make(map[peer.ID]writtenStatus),
		announced:  make(map[peer.ID]cid.Cid),
	}
	if t.sampleSize == 0 {
		t.sampleSize = DefaultCapacity
		if c, ok := st.(interface{ Capacity() int }); ok && c.Capacity() > 0 {
			t.sampleSize = c.Capacity()
		}
	}
	if t.owner = cfg.owner; t.owner == "" {
		if t.owner, err = trackerOwner(ds); err != nil {
			return nil, err
		}
	}
	// The Tracker's defaults first, so that the caller's ingest options
	// win; its applier, order and hooks last, because the Tracker is built
	// on them.
	iopts := []ingest.Option{
		ingest.WithLogger(cfg.logger),
		ingest.WithRequestRate(DefaultRequestRate, DefaultRequestBurst),
		ingest.WithSlot(DefaultWalkSlotTime, DefaultWalkSlotAds),
	}
	iopts = append(iopts, cfg.ingestOpts...)
	walks, _ := st.(Walks)
	iopts = append(iopts,
		ingest.WithApplier(func(pub peer.ID) ingest.Applier {
			if walks != nil {
				return &sharedApplier{walkApplier: walkApplier{t: t, pub: pub}, walks: walks}
			}
			return walkApplier{t: t, pub: pub}
		}),
		// Pieces are immutable and removals ignored: order does not
		// matter, so each ad is applied as it is fetched.
		ingest.WithUnordered(),
		ingest.WithHooks(ingest.Hooks{WalkDone: t.walkDone}),
	)
	t.ing, err = ingest.New(nil, ds, t.newSyncer, iopts...)
	if err != nil {
		return nil, fmt.Errorf("piece: tracker: %w", err)
	}
	t.requestTimeout = t.ing.RequestTimeout()
	t.recv, err = announce.NewReceiver(append([]announce.Option{announce.WithLogger(cfg.logger)}, cfg.announceOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("piece: tracker: %w", err)
	}
	return t, nil
}

// newSyncer is the ingest.SyncerFunc: an ipnisync HTTP client of the
// publisher's HTTP addresses.
func (t *Tracker) newSyncer(pub peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
	h, _ := httpAddrs(addrs)
	if len(h) == 0 {
		return nil, fmt.Errorf("publisher %s: %w", pub, errUnsupported)
	}
	return ipnisync.New(peer.AddrInfo{ID: pub, Addrs: h},
		ipnisync.WithTimeout(t.requestTimeout), ipnisync.WithHTTPClient(t.pubClient), ipnisync.WithLogger(t.log))
}

// AnnounceHandler returns the handler of IPNI HTTP announces: PUT /announce
// and PUT /ingest/announce; mount it at the root of a listener or at those
// paths. Accepted announces are walked by [Tracker.Run].
func (t *Tracker) AnnounceHandler() http.Handler { return t.recv }

// Announce tells the Tracker that publisher, reachable at addrs, has head
// (cid.Undef: ask the publisher). A publisher with no HTTP address is not
// walked; the error says so.
func (t *Tracker) Announce(publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	h, u := httpAddrs(addrs)
	if len(h) == 0 {
		return fmt.Errorf("piece: announce of %s: %w", publisher, errUnsupported)
	}
	t.learnPublisher(publisher, u)
	return t.ing.Announce(publisher, h, head)
}

// Run learns providers and walks their chains until ctx ends; see
// [Tracker]. It returns nil after ctx ends and everything it started has
// stopped, or the error that stopped it (the walk state cannot be read).
func (t *Tracker) Run(ctx context.Context) error {
	eg, ctx := errgroup.WithContext(ctx)
	eg.Go(func() error { return t.ing.Run(ctx) })
	eg.Go(func() error { t.announceLoop(ctx); return nil })
	eg.Go(func() error { t.pollLoop(ctx); return nil })
	eg.Go(func() error { t.statusLoop(ctx); return nil })
	err := eg.Wait()
	// Walks stopped where they were: record their positions.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	t.writeStatuses(wctx)
	return err
}

// Close closes the announce handler (it answers 503 afterwards) and the
// idle connections to publishers. It is idempotent.
func (t *Tracker) Close() error {
	t.pubClient.CloseIdleConnections()
	return t.recv.Close()
}

func (t *Tracker) announceLoop(ctx context.Context) {
	for {
		a, err := t.recv.Next(ctx)
		if err != nil {
			return // ctx ended or the receiver was closed
		}
		if err := t.Announce(a.Publisher, a.Addrs, a.Cid); err != nil {
			t.log.Warn("announce not walked", "publisher", a.Publisher.String(), "cid", a.Cid.String(), "error", err)
			if errors.Is(err, errUnsupported) {
				t.markUnsupported(ctx, a.Publisher, nil, a.Addrs)
			}
		}
	}
}

func (t *Tracker) learnPublisher(pub peer.ID, url string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pubLocked(pub)
	if url != "" {
		p.url = url
	}
}

func (t *Tracker) learnProvider(pub, prov peer.ID) {
	if prov == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pubLocked(pub).providers[prov] = true
}

func (t *Tracker) pubLocked(pub peer.ID) *trackedPub {
	p := t.pubs[pub]
	if p == nil {
		p = &trackedPub{providers: make(map[peer.ID]bool)}
		t.pubs[pub] = p
	}
	return p
}

// providersOf returns the providers known for pub, or pub itself when none
// is.
func (t *Tracker) providersOf(pub peer.ID) []peer.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.pubs[pub]; p != nil && len(p.providers) > 0 {
		return slices.Sorted(maps.Keys(p.providers))
	}
	return []peer.ID{pub}
}

// ownerKey is where a Tracker keeps its owner name in its datastore.
var ownerKey = datastore.NewKey("/piece/owner")

// trackerOwner returns the owner name kept in ds, making and keeping a
// random one the first time.
func trackerOwner(ds datastore.Batching) (string, error) {
	ctx := context.Background()
	v, err := ds.Get(ctx, ownerKey)
	switch {
	case err == nil && len(v) > 0:
		return string(v), nil
	case err != nil && !errors.Is(err, datastore.ErrNotFound):
		return "", fmt.Errorf("piece: tracker: read owner: %w", err)
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("piece: tracker: owner: %w", err)
	}
	owner := hex.EncodeToString(b[:])
	if err := ds.Put(ctx, ownerKey, []byte(owner)); err != nil {
		return "", fmt.Errorf("piece: tracker: keep owner: %w", err)
	}
	return owner, nil
}

// setElsewhere notes whether another Tracker walks pub now; the status
// loop leaves the statuses of its providers to that one.
func (t *Tracker) setElsewhere(pub peer.ID, elsewhere bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if elsewhere {
		t.elsewhere[pub] = true
	} else {
		delete(t.elsewhere, pub)
	}
}
