package ingest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/store"
)

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
			// Announced addresses are anyone's word: they get a short
			// deadline, so that addresses that accept and never answer
			// (a tarpit) cannot hold a worker long.
			hctx, cancel := context.WithTimeout(ctx, i.cfg.headCheckTimeout)
			head, err = src.Head(hctx)
			cancel()
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
		i.logSampled("announce ignored", "announce ignored: the publisher's signed head does not verify at the announced addresses",
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
			i.releaseLocked(p)
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
	if errors.Is(err, context.Canceled) || errors.Is(err, ErrWalkedElsewhere) {
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
	if p.verified {
		i.log.Warn("walk failed", "publisher", p.id.String(), "error", err, "failures", p.failures, "retry", backoff)
	} else {
		// Anyone can announce a publisher that fails here: counted, and
		// logged sampled.
		i.failedNew++
		if s := i.srcs[p.source]; s != nil {
			s.failed(now)
		}
		i.logSampled("unverified failed", "a publisher that never verified failed its check", "publisher", p.id.String(), "source", p.source, "error", err)
	}
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
	return i.updateProviderLocked(ctx, id, change)
}

func (i *Ingester) updateProviderLocked(ctx context.Context, id peer.ID, change func(*store.ProviderInfo)) error {
	info, err := i.st.Provider(ctx, id)
	_, lags := i.provLag[id]
	switch {
	case errors.Is(err, store.ErrNotFound) && lags:
		info = cloneProvider(i.provKnown[id]) // as an ad applied would write it
	case errors.Is(err, store.ErrNotFound):
		info = store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id}}
	case err != nil:
		return fmt.Errorf("ingest: read provider %s: %w", id, err)
	case lags:
		// Only these two fields were deferred; the rest of the record
		// may have been changed by another writer (a handoff).
		k := i.provKnown[id]
		info.LastAdvertisement, info.LastAdvertisementTime = k.LastAdvertisement, k.LastAdvertisementTime
	}
	change(&info)
	if err := i.st.PutProvider(ctx, info); err != nil {
		return fmt.Errorf("ingest: write provider %s: %w", id, err)
	}
	if i.provKnown == nil {
		i.provKnown = make(map[peer.ID]store.ProviderInfo)
	}
	i.provKnown[id] = cloneProvider(info)
	delete(i.provLag, id)
	return nil
}

// deferProvider is updateProvider for an advertisement applied: when
// change, applied to the record as this Ingester last wrote it, moves
// nothing but LastAdvertisement and LastAdvertisementTime, it writes
// nothing yet and marks the record lagging; flushProviders writes it at
// the walk's next checkpoint, before the store's Flush. A chain of small
// advertisements of one provider (one context each) otherwise reads,
// decodes, encodes and writes the provider record once per advertisement,
// a third of the CPU of applying them. A record lags by at most one
// checkpoint (WithCheckpoint); a process killed before it applies those
// advertisements again, and sets it then.
func (i *Ingester) deferProvider(ctx context.Context, id peer.ID, change func(*store.ProviderInfo)) error {
	i.provMu.Lock()
	defer i.provMu.Unlock()
	known, ok := i.provKnown[id]
	if !ok {
		return i.updateProviderLocked(ctx, id, change)
	}
	next := cloneProvider(known)
	change(&next)
	a, b := known, next
	a.LastAdvertisement, a.LastAdvertisementTime = cid.Undef, time.Time{}
	b.LastAdvertisement, b.LastAdvertisementTime = cid.Undef, time.Time{}
	if !reflect.DeepEqual(a, b) {
		return i.updateProviderLocked(ctx, id, change)
	}
	i.provKnown[id] = next
	if i.provLag == nil {
		i.provLag = make(map[peer.ID]struct{})
	}
	i.provLag[id] = struct{}{}
	return nil
}

// flushProviders writes every record that lags (see deferProvider): the
// deferred LastAdvertisement over the record in the store, which another
// writer (a handoff) may have changed since, or the whole record if it is
// gone, as an advertisement applied would have written it.
func (i *Ingester) flushProviders(ctx context.Context) error {
	i.provMu.Lock()
	defer i.provMu.Unlock()
	for id := range i.provLag {
		if err := i.updateProviderLocked(ctx, id, func(*store.ProviderInfo) {}); err != nil {
			return err
		}
	}
	return nil
}

// cloneProvider copies info deeply enough that changing the copy as
// Apply does leaves info as it was.
func cloneProvider(info store.ProviderInfo) store.ProviderInfo {
	info.AddrInfo.Addrs = slices.Clone(info.AddrInfo.Addrs)
	info.Publisher.Addrs = slices.Clone(info.Publisher.Addrs)
	if ep := info.ExtendedProviders; ep != nil {
		c := *ep
		c.Providers = slices.Clone(ep.Providers)
		c.Metadatas = slices.Clone(ep.Metadatas)
		c.Contextual = slices.Clone(ep.Contextual)
		info.ExtendedProviders = &c
	}
	return info
}

// logSampled logs msg at warning level at most once per logSampleEvery
// for each kind, with the count of like events held back since the last
// one; the others at debug level.
func (i *Ingester) logSampled(kind, msg string, args ...any) {
	ok, held := i.sampled.Allow(kind)
	if !ok {
		i.log.Debug(msg, args...)
		return
	}
	if held > 0 {
		args = append(args, "like_events_not_logged", held)
	}
	i.log.Warn(msg, args...)
}
