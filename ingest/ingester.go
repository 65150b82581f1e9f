package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/store"
)

// Ingester ingests the advertisement chains of many publishers into a
// store: it schedules one [Walker] per publisher and applies their
// advertisements. See the package documentation.
type Ingester struct {
	st        store.Store
	ds        datastore.Batching
	newSyncer SyncerFunc
	cfg       *config
	log       *slog.Logger

	wake   chan struct{} // a publisher became ready; buffered, 1
	provMu sync.Mutex    // serialises read-modify-writes of provider records

	mu      sync.Mutex
	policy  Policy
	pubs    map[peer.ID]*publisher
	running int // walks started by Run and not yet finished
}

// publisher is the Ingester's state of one publisher; mu of the Ingester
// guards the fields without their own synchronisation.
type publisher struct {
	id     peer.ID
	walker *Walker

	addrs    []multiaddr.Multiaddr
	syncer   *limitedSyncer // made from addrs; nil until needed
	want     cid.Cid        // head to walk to next; Undef: ask the publisher
	queued   bool           // a walk is wanted
	walking  bool           // a walk runs now
	failures int
	retryAt  time.Time
	lastErr  error
	errTime  time.Time

	entries atomic.Uint64
	addrsMu sync.Mutex // guards addrs for announcedAddrs
}

func (p *publisher) announcedAddrs() []multiaddr.Multiaddr {
	p.addrsMu.Lock()
	defer p.addrsMu.Unlock()
	return slices.Clone(p.addrs)
}

// New returns an Ingester that puts advertisements into st, keeps walker
// state in ds, and reaches publishers through the Syncers newSyncer makes.
// With [WithApplier], advertisements go to the applier instead and st may be
// nil. It starts nothing: call [Ingester.Run].
func New(st store.Store, ds datastore.Batching, newSyncer SyncerFunc, opts ...Option) (*Ingester, error) {
	switch {
	case ds == nil:
		return nil, fmt.Errorf("%w: nil datastore", ErrInvalidOption)
	case newSyncer == nil:
		return nil, fmt.Errorf("%w: nil SyncerFunc", ErrInvalidOption)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.applier != nil {
		st = nil // never written: the applier consumes the advertisements
	} else if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOption)
	}
	return &Ingester{
		st:        st,
		ds:        ds,
		newSyncer: newSyncer,
		cfg:       cfg,
		log:       cfg.logger,
		wake:      make(chan struct{}, 1),
		policy:    cfg.policy,
		pubs:      make(map[peer.ID]*publisher),
	}, nil
}

// SetPolicy replaces the policy. Walks of publishers it now denies that
// are running finish; no new one starts.
func (i *Ingester) SetPolicy(p Policy) {
	i.mu.Lock()
	i.policy = p.clone()
	i.mu.Unlock()
}

// Walker returns the walker of publisher, making it if needed; for
// inspection ([Walker.State]) and handoff ([Walker.Reset]).
func (i *Ingester) Walker(publisher peer.ID) (*Walker, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	p, err := i.publisherLocked(publisher)
	if err != nil {
		return nil, err
	}
	return p.walker, nil
}

func (i *Ingester) publisherLocked(id peer.ID) (*publisher, error) {
	if p := i.pubs[id]; p != nil {
		return p, nil
	}
	w, err := newWalker(i.ds, id, i.cfg)
	if err != nil {
		return nil, err
	}
	// The addresses a previous process used, so that an announce or sync
	// without addresses after a restart still reaches the publisher.
	addrs, err := i.storedAddrs(context.Background(), id)
	if err != nil {
		return nil, err
	}
	p := &publisher{id: id, walker: w, addrs: addrs}
	i.pubs[id] = p
	return p, nil
}

// storedAddrs reads the addresses persisted for publisher (none if never
// persisted).
func (i *Ingester) storedAddrs(ctx context.Context, publisher peer.ID) ([]multiaddr.Multiaddr, error) {
	raw, err := i.ds.Get(ctx, keysFor(publisher).key(keyAddrs))
	if err != nil && !errors.Is(err, datastore.ErrNotFound) {
		return nil, fmt.Errorf("ingest: addresses of %s: %w", publisher, err)
	}
	var addrs []multiaddr.Multiaddr
	for _, s := range strings.Fields(string(raw)) {
		if a, err := multiaddr.NewMultiaddr(s); err == nil {
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// Announce tells the Ingester that publisher, reachable at addrs, has head
// (cid.Undef: ask the publisher for its head). The walk happens in
// [Ingester.Run]. A newer announce replaces one still pending; one made
// while the publisher is being walked is taken when that walk ends. Addrs
// may be empty to keep the addresses last announced, to this Ingester or
// (persisted with the walk) to a previous one on the same datastore. It returns
// [ErrNotAllowed] for a publisher the policy denies.
func (i *Ingester) Announce(publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.policy.Allowed(publisher) {
		return fmt.Errorf("%w: %s", ErrNotAllowed, publisher)
	}
	p, err := i.publisherLocked(publisher)
	if err != nil {
		return err
	}
	i.setAddrsLocked(p, addrs)
	p.want, p.queued = head, true
	select {
	case i.wake <- struct{}{}:
	default:
	}
	return nil
}

func (i *Ingester) setAddrsLocked(p *publisher, addrs []multiaddr.Multiaddr) {
	if len(addrs) == 0 || slices.EqualFunc(addrs, p.addrs, multiaddr.Multiaddr.Equal) {
		return
	}
	p.addrsMu.Lock()
	p.addrs = slices.Clone(addrs)
	p.addrsMu.Unlock()
	p.syncer = nil // made again from the new addresses
}

// Sync walks publisher's chain up to head now, in the caller's goroutine,
// and returns the walk's error (it is also recorded in the status). It
// waits for a walk of the same publisher that is running. Addrs and head
// are as for [Ingester.Announce].
func (i *Ingester) Sync(ctx context.Context, publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	i.mu.Lock()
	if !i.policy.Allowed(publisher) {
		i.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotAllowed, publisher)
	}
	p, err := i.publisherLocked(publisher)
	if err == nil {
		i.setAddrsLocked(p, addrs)
	}
	i.mu.Unlock()
	if err != nil {
		return err
	}
	err = i.walk(ctx, p, head)
	i.mu.Lock()
	i.recordLocked(p, err)
	i.mu.Unlock()
	return err
}

// walk runs one walk of p to head.
func (i *Ingester) walk(ctx context.Context, p *publisher, head cid.Cid) error {
	src, err := i.syncerFor(ctx, p)
	if err != nil {
		return err
	}
	var a Applier = storeApplier{i: i, pub: p}
	if i.cfg.applier != nil {
		a = i.cfg.applier(p.id)
	}
	err = p.walker.Walk(ctx, src, head, a)
	var ae *AdError
	if errors.As(err, &ae) && ae.Provider != "" && ctx.Err() == nil && i.st != nil {
		if rerr := i.recordProviderError(ctx, p, ae); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// syncerFor returns p's syncer, making it (and persisting p's addresses
// for a restart) if needed.
func (i *Ingester) syncerFor(ctx context.Context, p *publisher) (Syncer, error) {
	i.mu.Lock()
	s, addrs := p.syncer, p.addrs
	i.mu.Unlock()
	if s != nil {
		return s, nil
	}
	raw, err := i.newSyncer(p.id, addrs)
	if err != nil {
		return nil, fmt.Errorf("%w: syncer for %s: %w", ErrFetch, p.id, err)
	}
	var enc strings.Builder
	for _, a := range addrs {
		enc.WriteString(a.String())
		enc.WriteByte('\n')
	}
	if err := i.ds.Put(ctx, keysFor(p.id).key(keyAddrs), []byte(enc.String())); err != nil {
		return nil, fmt.Errorf("ingest: persist addresses of %s: %w", p.id, err)
	}
	ls := newLimitedSyncer(raw, i.cfg)
	i.mu.Lock()
	if slices.EqualFunc(addrs, p.addrs, multiaddr.Multiaddr.Equal) {
		p.syncer = ls
	}
	i.mu.Unlock()
	return ls, nil
}

// recordLocked notes the outcome of a walk of p in its status.
func (i *Ingester) recordLocked(p *publisher, err error) {
	if err == nil {
		p.failures, p.retryAt = 0, time.Time{}
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	now := time.Now()
	p.failures++
	p.lastErr, p.errTime = err, now
	backoff := i.cfg.backoffMin << min(p.failures-1, 30)
	if backoff > i.cfg.backoffMax || backoff <= 0 {
		backoff = i.cfg.backoffMax
	}
	p.retryAt = now.Add(backoff)
	i.log.Warn("walk failed", "publisher", p.id.String(), "error", err, "failures", p.failures, "retry", backoff)
	if h := i.cfg.hooks.SyncFailed; h != nil {
		h(p.id, err)
	}
}

// recordProviderError stores the error of an advertisement in its
// provider's record.
func (i *Ingester) recordProviderError(ctx context.Context, p *publisher, ae *AdError) error {
	return i.updateProvider(ctx, ae.Provider, func(info *store.ProviderInfo) {
		if info.Publisher.ID == "" {
			info.Publisher = peer.AddrInfo{ID: p.id, Addrs: p.announcedAddrs()}
		}
		info.LastError = ae.Error()
		info.LastErrorTime = time.Now()
	})
}

// updateProvider reads, changes and writes back the record of id,
// creating it if there is none.
func (i *Ingester) updateProvider(ctx context.Context, id peer.ID, change func(*store.ProviderInfo)) error {
	i.provMu.Lock()
	defer i.provMu.Unlock()
	info, err := i.st.Provider(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		info = store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id}}
	case err != nil:
		return fmt.Errorf("ingest: read provider %s: %w", id, err)
	}
	change(&info)
	if err := i.st.PutProvider(ctx, info); err != nil {
		return fmt.Errorf("ingest: write provider %s: %w", id, err)
	}
	return nil
}

// Run walks announced publishers until ctx ends: at most the configured
// number at once, one walk per publisher at a time, a failed publisher
// again after its backoff. It first resumes every walk a previous process
// left unfinished. Run returns nil after ctx ends and every walk it started
// has stopped (each persisted where it was), or an error if it cannot read
// the walks to resume. Call it once.
func (i *Ingester) Run(ctx context.Context) error {
	if err := i.resume(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := i.startReady(ctx, &wg)
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-i.wake:
		case <-timer.C:
		}
	}
}

// startReady starts a walk for every queued publisher that may walk now,
// within the worker limit, and returns when the next backed-off one may.
func (i *Ingester) startReady(ctx context.Context, wg *sync.WaitGroup) (next time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	now := time.Now()
	for _, p := range i.pubs {
		if i.running >= i.cfg.workers {
			return next
		}
		if !p.queued || p.walking {
			continue
		}
		if !i.policy.Allowed(p.id) {
			p.queued = false
			continue
		}
		if now.Before(p.retryAt) {
			if next.IsZero() || p.retryAt.Before(next) {
				next = p.retryAt
			}
			continue
		}
		head := p.want
		p.queued, p.walking, p.want = false, true, cid.Undef
		i.running++
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := i.walk(ctx, p, head)
			i.mu.Lock()
			p.walking = false
			i.running--
			i.recordLocked(p, err)
			if err != nil && ctx.Err() == nil && !p.queued {
				p.want, p.queued = head, true // retry after the backoff
			}
			i.mu.Unlock()
			select {
			case i.wake <- struct{}{}:
			default:
			}
		}()
	}
	return next
}

// resume queues every publisher with a walk in progress in ds, with the
// addresses it last announced.
func (i *Ingester) resume(ctx context.Context) error {
	res, err := i.ds.Query(ctx, query.Query{Prefix: walkingRoot, KeysOnly: true})
	if err != nil {
		return fmt.Errorf("ingest: list unfinished walks: %w", err)
	}
	entries, err := res.Rest()
	if err != nil {
		return fmt.Errorf("ingest: list unfinished walks: %w", err)
	}
	for _, e := range entries {
		id, err := peer.Decode(strings.TrimPrefix(e.Key, walkingRoot+"/"))
		if err != nil {
			continue // not ours
		}
		i.mu.Lock()
		if i.policy.Allowed(id) {
			p, err := i.publisherLocked(id) // with its stored addresses
			if err != nil {
				i.mu.Unlock()
				return fmt.Errorf("ingest: resume %s: %w", id, err)
			}
			p.queued = true
		}
		i.mu.Unlock()
		i.log.Info("resuming walk", "publisher", id.String())
	}
	return nil
}

// Status returns the status of publisher, and false if the Ingester has
// not heard of it.
func (i *Ingester) Status(publisher peer.ID) (Status, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	p := i.pubs[publisher]
	if p == nil {
		return Status{}, false
	}
	return i.statusLocked(p), true
}

// Statuses returns the status of every publisher the Ingester has heard
// of, ordered by publisher.
func (i *Ingester) Statuses() []Status {
	i.mu.Lock()
	out := make([]Status, 0, len(i.pubs))
	for _, p := range i.pubs {
		out = append(out, i.statusLocked(p))
	}
	i.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(string(a.Publisher), string(b.Publisher)) })
	return out
}

func (i *Ingester) statusLocked(p *publisher) Status {
	ws, _ := p.walker.snapshot()
	walked, applied := p.walker.Progress()
	st := Status{
		Publisher:      p.id,
		Addrs:          slices.Clone(p.addrs),
		Head:           ws.Head,
		LastHead:       ws.LastHead,
		Pending:        ws.Pending(),
		Walking:        p.walking,
		AdsWalked:      walked,
		AdsApplied:     applied,
		EntriesIndexed: p.entries.Load(),
		Failures:       p.failures,
		RetryAt:        p.retryAt,
		LastError:      p.lastErr,
		LastErrorTime:  p.errTime,
	}
	if p.queued {
		st.Announced = p.want
	}
	return st
}
