package piece

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
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

// pollLoop reads /providers and asks configured publishers for their head,
// now and every poll interval.
func (t *Tracker) pollLoop(ctx context.Context) {
	if t.cfg.providersURL == "" && len(t.cfg.publishers) == 0 {
		return
	}
	resolved := make(map[string]peer.ID) // configured address → publisher
	tick := time.NewTicker(t.cfg.pollInterval)
	defer tick.Stop()
	for {
		if t.cfg.providersURL != "" {
			if n, err := t.Poll(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				t.log.Warn("reading providers failed", "url", t.cfg.providersURL, "error", err)
			} else {
				t.log.Debug("providers read", "url", t.cfg.providersURL, "providers", n)
			}
		}
		for _, s := range t.cfg.publishers {
			if err := t.walkConfigured(ctx, s, resolved); err != nil && ctx.Err() == nil {
				t.log.Warn("configured publisher not walked", "address", s, "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// walkConfigured queues a walk of the configured publisher s to its current
// head, identifying it first if its address does not name it.
func (t *Tracker) walkConfigured(ctx context.Context, s string, resolved map[string]peer.ID) error {
	id, a, u, err := parsePublisher(s)
	if err != nil {
		return err
	}
	if id == "" {
		id = resolved[s]
	}
	if id == "" {
		if id, err = t.identify(ctx, u); err != nil {
			return err
		}
		resolved[s] = id
		t.log.Info("publisher identified by its signed head", "publisher", id.String(), "address", u)
	}
	t.learnPublisher(id, u)
	return t.ing.Announce(id, []multiaddr.Multiaddr{a}, cid.Undef)
}

// identify fetches the signed head of the publisher at base and returns the
// peer whose key signed it (after checking the signature).
func (t *Tracker) identify(ctx context.Context, base string) (peer.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, t.requestTimeout)
	defer cancel()
	u := strings.TrimSuffix(base, "/") + ipnisync.IPNIPath + "/head"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := t.pubClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("identify publisher: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent:
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, ipnisync.ErrNoHead)
	default:
		return "", fmt.Errorf("identify publisher: GET %s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, err)
	}
	h, err := ipnisync.DecodeSignedHead(body)
	if err != nil {
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, err)
	}
	id, err := h.Signer()
	if err == nil {
		err = h.Verify(id)
	}
	if err != nil {
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, err)
	}
	return id, nil
}

// providerInfo is what the Tracker reads of one element of GET /providers
// (the reference's model.ProviderInfo; other fields are ignored).
type providerInfo struct {
	AddrInfo          peer.AddrInfo
	LastAdvertisement cid.Cid
	Publisher         *peer.AddrInfo
}

// Poll reads the /providers endpoint once and queues a walk of every HTTP
// publisher whose head changed; it returns how many providers it read.
// Elements that do not decode are skipped and logged. [Tracker.Run] calls
// it every poll interval; it is exported for an admin "poll now".
func (t *Tracker) Poll(ctx context.Context) (int, error) {
	if t.cfg.providersURL == "" {
		return 0, fmt.Errorf("piece: poll: %w: no providers URL", ErrInvalidTrackerOption)
	}
	ctx, cancel := context.WithTimeout(ctx, max(t.requestTimeout, 30*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.cfg.providersURL, nil)
	if err != nil {
		return 0, fmt.Errorf("piece: poll: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.cfg.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("piece: poll: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("piece: poll: GET %s: status %d", t.cfg.providersURL, resp.StatusCode)
	}
	var raw []json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxProvidersBody)).Decode(&raw); err != nil {
		return 0, fmt.Errorf("piece: poll: GET %s: %w", t.cfg.providersURL, err)
	}
	n := 0
	for _, r := range raw {
		var pi providerInfo
		if err := json.Unmarshal(r, &pi); err != nil || pi.AddrInfo.ID == "" {
			t.log.Debug("skipping a provider that does not decode", "error", err)
			continue
		}
		n++
		t.track(ctx, pi)
	}
	return n, nil
}

// track handles one /providers element.
func (t *Tracker) track(ctx context.Context, pi providerInfo) {
	prov := pi.AddrInfo.ID
	pub := pi.AddrInfo
	if pi.Publisher != nil && pi.Publisher.ID != "" {
		pub = *pi.Publisher
	}
	h, u := httpAddrs(pub.Addrs)
	if len(h) == 0 {
		t.markUnsupported(ctx, pub.ID, []peer.ID{prov}, pub.Addrs)
		return
	}
	t.learnPublisher(pub.ID, u)
	t.learnProvider(pub.ID, prov)
	t.mu.Lock()
	last, seen := t.announced[pub.ID]
	if seen && last.Equals(pi.LastAdvertisement) {
		t.mu.Unlock()
		return
	}
	t.announced[pub.ID] = pi.LastAdvertisement
	t.mu.Unlock()
	if err := t.ing.Announce(pub.ID, h, pi.LastAdvertisement); err != nil {
		t.log.Warn("provider not walked", "provider", prov.String(), "publisher", pub.ID.String(), "error", err)
	}
}

// markUnsupported writes the "unsupported protocol" status of the providers
// of a publisher that has no HTTP address (the publisher itself when none
// is known).
func (t *Tracker) markUnsupported(ctx context.Context, pub peer.ID, provs []peer.ID, addrs []multiaddr.Multiaddr) {
	if len(provs) == 0 {
		provs = t.providersOf(pub)
	}
	ss := make([]string, len(addrs))
	for i, a := range addrs {
		ss[i] = a.String()
	}
	w := writtenStatus{
		address: strings.Join(ss, " "),
		text:    fmt.Sprintf("unsupported protocol: publisher %s has no http or https address (%s)", pub, strings.Join(ss, ", ")),
	}
	for _, p := range provs {
		t.write(ctx, p, w, false)
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

func (t *Tracker) statusLoop(ctx context.Context) {
	tick := time.NewTicker(t.cfg.statusInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.writeStatuses(ctx)
		}
	}
}

// progressLogEvery is how often a status line is logged for each walk in
// progress.
const progressLogEvery = 30 * time.Second

// writeStatuses copies each publisher's walk status into the statuses of its
// providers.
func (t *Tracker) writeStatuses(ctx context.Context) {
	now := time.Now()
	t.mu.Lock()
	logProgress := now.Sub(t.lastLog) >= progressLogEvery
	if logProgress {
		t.lastLog = now
	}
	t.mu.Unlock()
	for _, st := range t.ing.Statuses() {
		if ctx.Err() != nil {
			return
		}
		t.mu.Lock()
		url := ""
		if p := t.pubs[st.Publisher]; p != nil {
			url = p.url
		}
		t.mu.Unlock()
		w := writtenStatus{address: url, head: st.Head, lastHead: st.LastHead}
		switch {
		case st.Walking && st.Pending > 0:
			w.text = fmt.Sprintf("walking: applying advertisements, %d pending", st.Pending)
		case st.Walking && st.Head.Defined():
			w.text = "walking: collecting advertisements"
		case st.Walking && st.LastHead.Defined() && st.Failures == 0:
			// Asking the publisher for its head, with no new head known:
			// as of now the provider is up to date. (A configured
			// publisher is asked at every poll; its status should not
			// flicker.)
			w.text = "up to date"
		case st.Walking:
			w.text = "walking: fetching the head"
		case st.Failures > 0:
			w.text = fmt.Sprintf("walk failed %d time(s) in a row; retrying at %s", st.Failures, st.RetryAt.UTC().Format(time.RFC3339))
		case st.LastHead.Defined() && !st.Head.Defined():
			w.text = "up to date"
		case st.Head.Defined():
			w.text = "walk interrupted; resuming"
		default:
			w.text = "waiting for the first walk"
		}
		if st.LastError != nil {
			w.lastError = st.LastError.Error()
		}
		if logProgress && (st.Walking || st.Failures > 0) {
			t.log.Info("walk status", "publisher", st.Publisher.String(), "status", w.text,
				"walked", st.AdsWalked, "applied", st.AdsApplied, "pending", st.Pending)
		}
		for _, p := range t.providersOf(st.Publisher) {
			t.write(ctx, p, w, true)
		}
	}
}

// write writes the fields of w that differ from what was last written for
// provider. A walk error is written only when it changed, so that an error
// the applier recorded (entries not retrievable) stays until the next walk
// error; withHeads says whether w carries walk positions.
func (t *Tracker) write(ctx context.Context, provider peer.ID, w writtenStatus, withHeads bool) {
	t.mu.Lock()
	old, had := t.written[provider]
	t.mu.Unlock()
	var u StatusUpdate
	if !had || w.address != old.address {
		u.Address = &w.address
	}
	if !had || w.text != old.text {
		u.Text = &w.text
	}
	if w.lastError != "" && w.lastError != old.lastError {
		u.LastError = &w.lastError
	}
	if withHeads {
		if !had || !w.head.Equals(old.head) {
			u.Head = &w.head
		}
		if !had || !w.lastHead.Equals(old.lastHead) {
			u.LastHead = &w.lastHead
		}
	}
	if u == (StatusUpdate{}) {
		return
	}
	if err := t.updateStatus(ctx, provider, u); err != nil {
		if ctx.Err() == nil {
			t.log.Warn("writing status failed", "provider", provider.String(), "error", err)
		}
		return
	}
	if w.lastError == "" {
		w.lastError = old.lastError
	}
	t.mu.Lock()
	t.written[provider] = w
	t.mu.Unlock()
}

// walkDone is the ingest hook called when a walk reached its head.
func (t *Tracker) walkDone(pub peer.ID, head cid.Cid, ads int, d time.Duration) {
	t.log.Info("walk done", "publisher", pub.String(), "cid", head.String(), "ads", ads, "took", d.Round(time.Millisecond))
}
