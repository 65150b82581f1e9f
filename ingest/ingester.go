package ingest

import (
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
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/internal/logsample"
	"github.com/indexkit/indexkit/store"
)

// logSampleEvery is how often the Ingester logs, at warning level, an
// event that anyone can cause (a publisher that never verified failing
// its check): one line of each kind per interval, with the count of those
// held back; the others go to debug level.
const logSampleEvery = 10 * time.Second

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
	// provKnown is the record of each provider as this Ingester last read
	// or wrote it, and provLag the providers whose record only lags on its
	// LastAdvertisement (see deferProvider); both guarded by provMu.
	provKnown map[peer.ID]store.ProviderInfo
	provLag   map[peer.ID]struct{}
	batches   chan *batch        // free batches: see getBatch
	sampled   *logsample.Sampler // of log lines anyone can cause

	mu         sync.Mutex
	policy     Policy
	pubs       map[peer.ID]*publisher
	seq        uint64 // queue order of the last publisher queued
	unverified int    // publishers in pubs that never verified
	srcs       map[string]*source
	refused    uint64 // new publishers refused for want of room
	evicted    uint64 // publishers that never verified forgotten for another source's
	failedNew  uint64 // checks of publishers that never verified that failed
	running    int    // walks started by Run and not yet finished
	runningNew int    // of those, walks of publishers not established
	checking   int    // head checks of publishers that never verified running
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
	source       string // while it never verified: the source it counts against ("": none)

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
		batches:   make(chan *batch, freeBatches),
		policy:    cfg.policy,
		pubs:      make(map[peer.ID]*publisher),
		srcs:      make(map[string]*source),
		sampled:   logsample.New(logSampleEvery),
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
		i.releaseLocked(p)
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
