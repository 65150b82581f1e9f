package ingest

import (
	"cmp"
	"context"
	"encoding/binary"
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

	mu         sync.Mutex
	policy     Policy
	pubs       map[peer.ID]*publisher
	seq        uint64 // queue order of the last publisher queued
	unverified int    // publishers in pubs that never verified
	running    int    // walks started by Run and not yet finished
	runningNew int    // of those, walks of publishers not established
}

// publisher is the Ingester's state of one publisher; mu of the Ingester
// guards the fields without their own synchronisation.
type publisher struct {
	id     peer.ID
	walker *Walker

	// addrs are where a head signed by the publisher was last fetched
	// (persisted, so also by an earlier process); verified is true once
	// there are such addresses. established is true once a walk of the
	// publisher has finished: it may use the reserved workers.
	addrs       []multiaddr.Multiaddr
	verified    bool
	established bool
	syncer      *limitedSyncer // made from addrs; nil until needed

	cand         []multiaddr.Multiaddr // announced, not verified yet; nil: none
	want         cid.Cid               // head to walk to next; Undef: ask the publisher
	headVerified bool                  // want is the head a yielded slot verified
	queued       bool                  // a walk is wanted
	seq          uint64                // queue order: the lowest queued walks first
	announced    time.Time             // last announce (expiry of unverified publishers)
	walking      bool                  // a walk runs now
	failures     int
	retryAt      time.Time
	lastErr      error
	errTime      time.Time

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

// RequestTimeout returns the bound of every request to a publisher
// ([WithRequestTimeout]), for a consumer that makes requests of its own to
// the publishers it walks.
func (i *Ingester) RequestTimeout() time.Duration { return i.cfg.requestTimeout }

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

// publisherLocked returns the state of id, loading what the datastore holds
// of it (verified addresses, last head, backoff) on first use.
func (i *Ingester) publisherLocked(id peer.ID) (*publisher, error) {
	if p := i.pubs[id]; p != nil {
		return p, nil
	}
	w, err := newWalker(i.ds, id, &i.cfg.walkerConfig)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	// The addresses a previous process verified, so that an announce or
	// sync without addresses after a restart still reaches the publisher.
	addrs, err := i.storedAddrs(ctx, id)
	if err != nil {
		return nil, err
	}
	ws, err := w.State(ctx)
	if err != nil {
		return nil, err
	}
	p := &publisher{id: id, walker: w, addrs: addrs, verified: len(addrs) > 0, established: ws.LastHead.Defined()}
	if p.failures, p.retryAt, err = i.storedBackoff(ctx, id); err != nil {
		return nil, err
	}
	if !p.verified {
		i.unverified++
	}
	i.pubs[id] = p
	return p, nil
}

// forgetLocked drops p, which never verified, from memory (nothing of it is
// persisted).
func (i *Ingester) forgetLocked(p *publisher) {
	if i.pubs[p.id] == p && !p.verified {
		delete(i.pubs, p.id)
		i.unverified--
	}
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

// storedBackoff reads the backoff persisted for publisher: consecutive
// failures and the time of the next try.
func (i *Ingester) storedBackoff(ctx context.Context, publisher peer.ID) (int, time.Time, error) {
	raw, err := i.ds.Get(ctx, keysFor(publisher).key(keyBackoff))
	switch {
	case errors.Is(err, datastore.ErrNotFound):
		return 0, time.Time{}, nil
	case err != nil:
		return 0, time.Time{}, fmt.Errorf("ingest: backoff of %s: %w", publisher, err)
	}
	failures, n := binary.Uvarint(raw)
	at, m := binary.Varint(raw[max(n, 0):])
	if n <= 0 || m <= 0 {
		return 0, time.Time{}, nil // unreadable: no backoff
	}
	return int(failures), time.Unix(0, at), nil
}

// persistBackoff records publisher's backoff (none when failures is 0), so
// that a restart does not walk a failing publisher again at once.
func (i *Ingester) persistBackoff(ctx context.Context, publisher peer.ID, failures int, retryAt time.Time) {
	k := keysFor(publisher).key(keyBackoff)
	var err error
	if failures == 0 {
		err = i.ds.Delete(ctx, k)
	} else {
		v := binary.AppendUvarint(nil, uint64(failures))
		err = i.ds.Put(ctx, k, binary.AppendVarint(v, retryAt.UnixNano()))
	}
	if err != nil {
		i.log.Warn("persisting backoff failed", "publisher", publisher.String(), "err", err)
	}
}

// Announce tells the Ingester that publisher, reachable at addrs, has head
// (cid.Undef: ask the publisher for its head). An announce is a hint, not
// an instruction: the walk happens in [Ingester.Run], and starts by
// fetching the publisher's signed head from addrs and verifying it against
// the publisher's key. Until then nothing is written and the addresses
// stored for the publisher stay; if it does not verify, the announce is
// ignored (logged); a publisher that never verified is held in memory only,
// with its error and backoff, until it expires or makes room for another.
// The
// walk goes to the verified head, which covers an announced head that is
// an older advertisement of the chain; an announced head that is not in
// the chain is ignored.
//
// A newer announce replaces one still pending; one made while the publisher
// is being walked is taken when that walk ends. Addrs may be empty to use
// the addresses last verified, by this Ingester or (persisted) by a
// previous one on the same datastore. Announce returns [ErrNotAllowed] for
// a publisher the policy denies, and [ErrTooManyPublishers] when too many
// publishers that never verified are pending ([WithUnverifiedLimit]).
func (i *Ingester) Announce(publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.policy.Allowed(publisher) {
		return fmt.Errorf("%w: %s", ErrNotAllowed, publisher)
	}
	now := time.Now()
	if i.pubs[publisher] == nil && i.unverified >= i.cfg.maxUnverified {
		i.expireLocked(now)
		i.evictFailedLocked()
		if i.unverified >= i.cfg.maxUnverified {
			return fmt.Errorf("%w: %d publishers that never verified are pending; %s is not taken", ErrTooManyPublishers, i.unverified, publisher)
		}
	}
	p, err := i.publisherLocked(publisher)
	if err != nil {
		return err
	}
	i.setCandLocked(p, addrs)
	p.want, p.headVerified = head, false
	p.announced = now
	i.queueLocked(p)
	select {
	case i.wake <- struct{}{}:
	default:
	}
	return nil
}

// queueLocked queues a walk of p, behind every publisher queued before it;
// p keeps its place if it is queued already.
func (i *Ingester) queueLocked(p *publisher) {
	if !p.queued {
		i.seq++
		p.queued, p.seq = true, i.seq
	}
}

// expireLocked forgets the publishers that never verified and either wait
// for a walk since longer than the unverified TTL or failed to verify
// longer ago than that.
func (i *Ingester) expireLocked(now time.Time) {
	if i.unverified == 0 {
		return
	}
	for _, p := range i.pubs {
		if p.verified || p.walking {
			continue
		}
		waited := p.queued && now.Sub(p.announced) > i.cfg.unverifiedTTL
		failed := !p.queued && p.lastErr != nil && now.Sub(p.errTime) > i.cfg.unverifiedTTL
		if waited || failed {
			i.log.Info("forgetting a publisher that never verified", "publisher", p.id.String(), "announced", p.announced, "err", p.lastErr)
			i.forgetLocked(p)
		}
	}
}

// evictFailedLocked forgets the publisher that never verified whose
// verification failed first, to make room for a new one: a publisher
// still waiting for its walk is never evicted, so a flood of announces
// cannot push out the publishers it arrived after.
func (i *Ingester) evictFailedLocked() {
	var oldest *publisher
	for _, p := range i.pubs {
		if p.verified || p.walking || p.queued || p.lastErr == nil {
			continue
		}
		if oldest == nil || p.errTime.Before(oldest.errTime) {
			oldest = p
		}
	}
	if oldest != nil {
		i.forgetLocked(oldest)
	}
}

// setCandLocked notes addrs as p's candidate addresses, verified when p is
// next walked; none (or those already verified) clears the candidate.
func (i *Ingester) setCandLocked(p *publisher, addrs []multiaddr.Multiaddr) {
	if len(addrs) == 0 || slices.EqualFunc(addrs, p.addrs, multiaddr.Multiaddr.Equal) {
		p.cand = nil
		return
	}
	p.cand = slices.Clone(addrs)
}

// Sync walks publisher's chain up to its head now, in the caller's
// goroutine, and returns the walk's error (it is also recorded in the
// status). It waits for a walk of the same publisher that is running.
// Addrs and head are as for [Ingester.Announce]: the head is verified
// first, and a failure to verify it is returned (wrapping [ErrUnverified]).
func (i *Ingester) Sync(ctx context.Context, publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	i.mu.Lock()
	if !i.policy.Allowed(publisher) {
		i.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotAllowed, publisher)
	}
	p, err := i.publisherLocked(publisher)
	if err == nil {
		i.setCandLocked(p, addrs)
	}
	i.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = i.walk(ctx, p, head, false, nil)
	i.mu.Lock()
	failures, retryAt, persist := i.recordLocked(p, err)
	i.mu.Unlock()
	if persist {
		i.persistBackoff(context.WithoutCancel(ctx), p.id, failures, retryAt)
	}
	return err
}

// walk runs one walk of p, within sl (nil: to the end): it verifies the
// publisher's head (unless headVerified) and walks to it. It returns the
// head walked to.
func (i *Ingester) walk(ctx context.Context, p *publisher, announced cid.Cid, headVerified bool, sl *slot) (cid.Cid, error) {
	var src Syncer
	var head cid.Cid
	var err error
	if headVerified && announced.Defined() {
		src, err = i.syncerFor(p)
		head = announced
	} else {
		src, head, err = i.verifyHead(ctx, p, announced)
	}
	if err != nil || !head.Defined() {
		return head, err
	}
	if sl != nil {
		src = meteredSyncer{Syncer: src, sl: sl}
	}
	var a Applier = storeApplier{i: i, pub: p}
	if i.cfg.applier != nil {
		a = i.cfg.applier(p.id)
	}
	err = p.walker.walk(ctx, src, head, a, sl)
	// An advertisement that does not verify names a provider it may not
	// speak for: its record is not touched.
	var ae *AdError
	if errors.As(err, &ae) && ae.Provider != "" && ctx.Err() == nil && i.st != nil && !errors.Is(err, ErrSignature) {
		if rerr := i.recordProviderError(ctx, p, ae); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return head, err
}

// verifyHead fetches the publisher's signed head, which the Syncer verifies
// against the publisher's key: first from the addresses announced since
// the last walk, if any, then (if those fail) from the addresses verified
// before. Addresses from which a head verified become the publisher's
// addresses (persisted); addresses that fail are dropped. It returns the
// Syncer of the addresses that verified and the head.
func (i *Ingester) verifyHead(ctx context.Context, p *publisher, announced cid.Cid) (Syncer, cid.Cid, error) {
	i.mu.Lock()
	cand, known := p.cand, slices.Clone(p.addrs)
	p.cand = nil
	i.mu.Unlock()
	var candErr error
	if cand != nil {
		src, err := i.limitedSyncer(p.id, cand)
		var head cid.Cid
		if err == nil {
			head, err = src.Head(ctx)
		}
		if err == nil {
			if err := i.setVerified(ctx, p, cand, src); err != nil {
				return nil, cid.Undef, err
			}
			i.noteAnnounced(p, announced, head)
			return src, head, nil
		}
		if ctx.Err() != nil {
			return nil, cid.Undef, err
		}
		candErr = fmt.Errorf("%w: head at the announced addresses %v: %w", ErrUnverified, cand, err)
		i.log.Warn("announce ignored: the publisher's signed head does not verify at the announced addresses",
			"publisher", p.id.String(), "addrs", fmt.Sprint(cand), "err", err, "known_addrs", len(known))
	}
	if len(known) == 0 {
		if candErr == nil {
			candErr = fmt.Errorf("%w: no address announced for %s", ErrUnverified, p.id)
		}
		return nil, cid.Undef, candErr
	}
	src, err := i.syncerFor(p)
	if err != nil {
		return nil, cid.Undef, errors.Join(candErr, err)
	}
	head, err := src.Head(ctx)
	if err != nil {
		return nil, cid.Undef, errors.Join(candErr, err)
	}
	if !p.verified {
		if err := i.setVerified(ctx, p, known, nil); err != nil {
			return nil, cid.Undef, err
		}
	}
	i.noteAnnounced(p, announced, head)
	return src, head, nil
}

// noteAnnounced logs an announced head that is not the verified head.
func (i *Ingester) noteAnnounced(p *publisher, announced, head cid.Cid) {
	if announced.Defined() && !announced.Equals(head) {
		i.log.Info("announced advertisement is not the publisher's signed head; walking to the head, which covers it if it is in the chain",
			"publisher", p.id.String(), "cid", announced.String(), "head", head.String())
	}
}

// setVerified makes addrs, from which a head signed by p verified, p's
// addresses: persisted, then in memory with their syncer src (nil: made
// when needed).
func (i *Ingester) setVerified(ctx context.Context, p *publisher, addrs []multiaddr.Multiaddr, src *limitedSyncer) error {
	var enc strings.Builder
	for _, a := range addrs {
		enc.WriteString(a.String())
		enc.WriteByte('\n')
	}
	if err := i.ds.Put(ctx, keysFor(p.id).key(keyAddrs), []byte(enc.String())); err != nil {
		return fmt.Errorf("ingest: persist addresses of %s: %w", p.id, err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if !slices.EqualFunc(addrs, p.addrs, multiaddr.Multiaddr.Equal) {
		p.addrsMu.Lock()
		p.addrs = slices.Clone(addrs)
		p.addrsMu.Unlock()
		p.syncer = src
	} else if p.syncer == nil {
		p.syncer = src
	}
	if !p.verified {
		p.verified = true
		if i.pubs[p.id] == p {
			i.unverified--
		}
	}
	return nil
}

// limitedSyncer makes a syncer of publisher at addrs with the Ingester's
// limits.
func (i *Ingester) limitedSyncer(publisher peer.ID, addrs []multiaddr.Multiaddr) (*limitedSyncer, error) {
	raw, err := i.newSyncer(publisher, addrs)
	if err != nil {
		return nil, fmt.Errorf("%w: syncer for %s: %w", ErrFetch, publisher, err)
	}
	return newLimitedSyncer(raw, &i.cfg.walkerConfig), nil
}

// syncerFor returns the syncer of p's verified addresses, making it if
// needed.
func (i *Ingester) syncerFor(p *publisher) (Syncer, error) {
	i.mu.Lock()
	s, addrs := p.syncer, p.addrs
	i.mu.Unlock()
	if s != nil {
		return s, nil
	}
	ls, err := i.limitedSyncer(p.id, addrs)
	if err != nil {
		return nil, err
	}
	i.mu.Lock()
	if slices.EqualFunc(addrs, p.addrs, multiaddr.Multiaddr.Equal) {
		p.syncer = ls
	}
	i.mu.Unlock()
	return ls, nil
}

// recordLocked notes the outcome of a walk of p in its status, and returns
// the backoff to persist (persist false: nothing to write).
func (i *Ingester) recordLocked(p *publisher, err error) (failures int, retryAt time.Time, persist bool) {
	if err == nil {
		persist = p.failures > 0
		p.failures, p.retryAt = 0, time.Time{}
		return 0, time.Time{}, persist
	}
	if errors.Is(err, context.Canceled) {
		return 0, time.Time{}, false
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
	// Only a publisher that verified has state worth keeping.
	return p.failures, p.retryAt, p.verified
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

// startReady starts walks of queued publishers, oldest queued first,
// within the worker limits, and returns when the next backed-off one may
// start. It also forgets publishers that never verified and waited too
// long.
func (i *Ingester) startReady(ctx context.Context, wg *sync.WaitGroup) (next time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	now := time.Now()
	i.expireLocked(now)
	if i.running >= i.cfg.workers {
		return next
	}
	var ready []*publisher
	for _, p := range i.pubs {
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
		ready = append(ready, p)
	}
	slices.SortFunc(ready, func(a, b *publisher) int { return cmp.Compare(a.seq, b.seq) })
	general := i.cfg.workers - i.cfg.reserved // workers open to publishers not established
	for _, p := range ready {
		if i.running >= i.cfg.workers {
			break
		}
		established := p.established
		if !established && i.runningNew >= general {
			continue
		}
		head, headVerified := p.want, p.headVerified
		p.queued, p.walking, p.want, p.headVerified = false, true, cid.Undef, false
		i.running++
		if !established {
			i.runningNew++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl := newSlot(i.cfg)
			walked, err := i.walk(ctx, p, head, headVerified, sl)
			i.mu.Lock()
			p.walking = false
			i.running--
			if !established {
				i.runningNew--
			}
			var failures int
			var retryAt time.Time
			var persist bool
			if errors.Is(err, errYield) {
				// Back of the queue, to the head this slot verified, unless
				// an announce came meanwhile.
				if !p.queued {
					p.want, p.headVerified = walked, true
				}
				i.queueLocked(p)
			} else {
				failures, retryAt, persist = i.recordLocked(p, err)
				if err == nil {
					p.established = p.established || walked.Defined()
				}
				if err != nil && ctx.Err() == nil && p.verified {
					i.queueLocked(p) // retry after the backoff
				}
			}
			i.mu.Unlock()
			if persist {
				i.persistBackoff(context.WithoutCancel(ctx), p.id, failures, retryAt)
			}
			select {
			case i.wake <- struct{}{}:
			default:
			}
		}()
	}
	return next
}

// resume queues every publisher with a walk in progress in ds, with the
// addresses it last verified.
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
			p.announced = time.Now()
			i.queueLocked(p)
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
		Verified:       p.verified,
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
