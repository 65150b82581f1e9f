package ingest

import (
	"fmt"
	"slices"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

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
