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
// previous one on the same datastore; addresses an earlier announce
// brought that are not tried yet are then still tried first. Announce
// returns [ErrNotAllowed] for a publisher the policy denies, and
// [ErrTooManyPublishers] when too many publishers that never verified are
// pending ([WithUnverifiedLimit]).
func (i *Ingester) Announce(publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	return i.AnnounceFrom("", publisher, addrs, head)
}

// AnnounceFrom is [Ingester.Announce] of an announce that came from
// source, a network whose announces share one fair share ([SourceOf]):
// while the most publishers that never verified are held
// ([WithUnverifiedLimit]), a new publisher from a source holding less
// than an equal share of them takes the place of one from the source
// holding the most, and one from a source holding its share or more is
// refused with [ErrTooManyPublishers]; and the head checks of publishers
// that never verified are shared among their sources the same way, a
// source whose publishers failed to verify after those whose did not.
// Source "" is a trusted caller (an operator, an assigner, a handoff),
// which has no share and is never refused for another's sake.
func (i *Ingester) AnnounceFrom(source string, publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.policy.Allowed(publisher) {
		return fmt.Errorf("%w: %s", ErrNotAllowed, publisher)
	}
	now := time.Now()
	if i.pubs[publisher] == nil {
		if err := i.roomLocked(source, publisher, now); err != nil {
			i.refused++
			return err
		}
	}
	p, err := i.publisherLocked(publisher)
	if err != nil {
		return err
	}
	if !p.verified && p.source == "" && source != "" && !p.walking {
		i.holdLocked(p, source)
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

// roomLocked makes room, if needed, for a new publisher announced from
// source, or says why there is none (an error wrapping
// [ErrTooManyPublishers]).
func (i *Ingester) roomLocked(source string, publisher peer.ID, now time.Time) error {
	if i.unverified < i.cfg.maxUnverified {
		return nil
	}
	i.expireLocked(now)
	i.evictFailedLocked()
	if i.unverified < i.cfg.maxUnverified {
		return nil
	}
	if source == "" {
		// A trusted caller takes the place of the largest source's
		// newest publisher rather than be refused.
		if i.evictFromLargestLocked(0) {
			return nil
		}
		return fmt.Errorf("%w: %d publishers that never verified are pending; %s is not taken", ErrTooManyPublishers, i.unverified, publisher)
	}
	mine := 0
	if s := i.srcs[source]; s != nil {
		mine = s.held
	}
	if share := i.fairShareLocked(source); mine >= share {
		return &sourceFullError{source: source, held: mine, share: share, publisher: publisher}
	}
	if i.evictFromLargestLocked(mine) {
		return nil
	}
	return fmt.Errorf("%w: %d publishers that never verified are pending, each being checked; %s is not taken", ErrTooManyPublishers, i.unverified, publisher)
}

// sourceFullError refuses a new publisher from a source that holds its
// fair share of the publishers that never verified.
type sourceFullError struct {
	source    string
	held      int
	share     int
	publisher peer.ID
}

func (e *sourceFullError) Error() string {
	return fmt.Sprintf("%s: %s holds %d publishers that never verified, its fair share of the full table is %d; %s is not taken",
		ErrTooManyPublishers, e.source, e.held, e.share, e.publisher)
}

func (e *sourceFullError) Unwrap() error { return ErrTooManyPublishers }

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
			i.log.Debug("forgetting a publisher that never verified", "publisher", p.id.String(), "announced", p.announced, "err", p.lastErr)
			i.forgetLocked(p)
		}
	}
	i.pruneSourcesLocked(now)
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
// next walked; those already verified clear the candidate. None keeps it:
// an announce without addresses (a node asking what it follows for its
// head) says nothing of where the publisher is, so addresses announced
// before and not tried yet are still tried first, and a failure is
// theirs. Dropping them would fail the check of a publisher that never
// verified with no address to try, against the source that announced
// them.
func (i *Ingester) setCandLocked(p *publisher, addrs []multiaddr.Multiaddr) {
	switch {
	case len(addrs) == 0:
	case slices.EqualFunc(addrs, p.addrs, multiaddr.Multiaddr.Equal):
		p.cand = nil
	default:
		p.cand = slices.Clone(addrs)
	}
}
