package piece

import (
	"context"
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
// Applier of this package (ingest.WithApplier): per publisher, the
// head / tail / lastHead position of the piece-indexer design is persisted
// in the datastore given to [NewTracker] (go-ds-leveldb on disk), so a
// restarted Tracker resumes every unfinished walk where it stopped; every
// block is fetched over ipnisync HTTP and checked against its CID, every
// head's and advertisement's signature is verified (by the provider or the
// publisher). Publishers are walked concurrently, at most ingest.WithWorkers
// at once, one walk each; each request is bounded by
// ingest.WithRequestTimeout and rate-limited per publisher
// (ingest.WithRequestRate); a publisher whose walk fails waits an
// exponential backoff (ingest.WithBackoff) before it is
// tried again. So a slow, hanging or broken publisher holds at most one
// walk slot for one request timeout at a time, and never blocks the others
// or spins on its bad advertisement.
//
// # What each advertisement does
//
// An advertisement with entries names its piece in its ContextID or its
// graphsync-filecoinv1 metadata ([PieceOf]); the payload CIDs are those of
// its entries' multihashes ([PayloadCID]), of which the k with the smallest
// [PayloadHash] are offered to the Store ([WithSampleSize]): exactly what a
// bottom-k Store keeps, at k writes per advertisement whatever its size.
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
// own ID, which is the provider's for most deployed publishers.
// Counters may count again the one advertisement that was being applied
// when a process was killed; a graceful stop counts exactly.
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

	mu        sync.Mutex
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
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidTrackerOption)
	}
	if ds == nil {
		return nil, fmt.Errorf("%w: nil datastore", ErrInvalidTrackerOption)
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
		written:    make(map[peer.ID]writtenStatus),
		announced:  make(map[peer.ID]cid.Cid),
	}
	if t.sampleSize == 0 {
		t.sampleSize = DefaultCapacity
		if c, ok := st.(interface{ Capacity() int }); ok && c.Capacity() > 0 {
			t.sampleSize = c.Capacity()
		}
	}
	// The Tracker's defaults first, so that the caller's ingest options
	// win; its applier and hooks last, because the Tracker is built on them.
	iopts := []ingest.Option{
		ingest.WithLogger(cfg.logger),
		ingest.WithRequestRate(DefaultRequestRate, DefaultRequestBurst),
		// Every applied ad is already in the Store: persisting the walk
		// position after each one bounds what a crash applies again to
		// one ad.
		ingest.WithCheckpoint(1, time.Second),
	}
	iopts = append(iopts, cfg.ingestOpts...)
	iopts = append(iopts,
		ingest.WithApplier(func(pub peer.ID) ingest.Applier { return walkApplier{t: t, pub: pub} }),
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
