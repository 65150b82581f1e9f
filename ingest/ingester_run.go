package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"
)

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
	var ready, unverified []*publisher
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
		if p.verified {
			ready = append(ready, p)
		} else {
			unverified = append(unverified, p)
		}
	}
	i.startChecksLocked(ctx, wg, unverified, now)
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
			if b, ok := i.cfg.pacer.(backgrounder); ok {
				// The walk's thread runs below the lookups' (see
				// Pacer); this goroutine ends with the walk.
				b.Background()
			}
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
			} else if errors.Is(err, ErrWalkedElsewhere) {
				// Not a failure: another process walks the publisher
				// (an unordered walk with shared Positions). Ask again
				// after one slot, which is when that walk yields, with a
				// head fetched then.
				if !p.queued {
					p.want, p.headVerified = cid.Undef, false
				}
				p.retryAt = time.Now().Add(i.cfg.slotTime)
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

// startChecksLocked starts the head checks of publishers that never
// verified (ready: queued, not backing off), within the check workers
// ([WithCheckWorkers]), in the order of the sources' fair shares
// (pickNewLocked). A check that verifies queues the publisher again for
// its walk, to the head it verified, which then takes a worker as any
// verified publisher's does: a check only waits on the network, so many
// run at once, and addresses that never answer hold a check worker for
// the head check deadline at most.
func (i *Ingester) startChecksLocked(ctx context.Context, wg *sync.WaitGroup, ready []*publisher, now time.Time) {
	for i.checking < i.cfg.checkWorkers {
		j := i.pickNewLocked(ready, i.cfg.checkWorkers, now)
		if j < 0 {
			return
		}
		p := ready[j]
		announced := p.want
		p.queued, p.walking, p.want, p.headVerified = false, true, cid.Undef, false
		i.checking++
		src := i.srcs[p.source]
		if src != nil {
			src.running++
			src.served = now
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, head, err := i.verifyHead(ctx, p, announced)
			i.mu.Lock()
			p.walking = false
			i.checking--
			if src != nil {
				src.running--
			}
			var failures int
			var retryAt time.Time
			var persist bool
			switch {
			case err == nil && head.Defined():
				// Verified: its walk is queued, to this head unless an
				// announce came meanwhile.
				if !p.queued {
					p.want, p.headVerified = head, true
				}
				i.queueLocked(p)
			default:
				failures, retryAt, persist = i.recordLocked(p, err)
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
}
