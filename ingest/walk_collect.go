package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/schema"
)

// collect takes one step down the chain: it fetches the advertisement at
// s.Tail, queues it, and moves the tail to its PreviousID, or ends the
// collection at the last head, an applied advertisement or the start of the
// chain.
func (w *Walker) collect(ctx context.Context, src Syncer, s WalkState, cb *collectBatch) (WalkState, error) {
	c := s.Tail
	stop, err := w.isApplied(ctx, s, c)
	if err != nil {
		return s, fmt.Errorf("ingest: walk %s: %w", w.publisher, err)
	}
	if stop {
		cb.add(collectWrite{key: w.keys.key(keyTail), del: true})
		s.Tail = cid.Undef
		w.setState(s)
		return s, nil
	}
	if w.cycle.meet(c) {
		return s, &AdError{Ad: c, Err: fmt.Errorf("%w: %s met twice walking from %s", ErrCycle, c, s.Head)}
	}
	if s.Collected >= w.cfg.adDepth {
		err := fmt.Errorf("ingest: walk %s from %s: %w: more than %d advertisements", w.publisher, s.Head, ErrDepthLimit, w.cfg.adDepth)
		if derr := w.abandon(ctx, s); derr != nil {
			return s, errors.Join(err, derr)
		}
		return s, err
	}

	block, err := src.Block(ctx, c)
	if err != nil {
		return s, &AdError{Ad: c, Err: err}
	}
	ad, err := schema.DecodeAdvertisement(c, block)
	if err != nil {
		return s, &AdError{Ad: c, Err: fmt.Errorf("%w: %w", ErrInvalidBlock, err)}
	}
	provider, _ := peer.Decode(ad.Provider) // validated by DecodeAdvertisement
	// Verified before anything of it is kept: a chain that is not the
	// publisher's (or its providers') costs no disk.
	signer, err := w.verify(ad, provider)
	if err != nil {
		return s, &AdError{Ad: c, Provider: provider, Err: err}
	}
	if limit := w.spillLimit(s); s.Spilled+int64(len(block)) > limit {
		err := fmt.Errorf("ingest: walk %s from %s: %w: its advertisements pending would take more than %d bytes", w.publisher, s.Head, ErrSpillLimit, limit)
		if derr := w.abandon(ctx, s); derr != nil {
			return s, errors.Join(err, derr)
		}
		return s, err
	}

	// The writes of this advertisement go to cb together, or not at all.
	var writes []collectWrite
	p := pending{flags: flagVerified, cid: c, signer: signer, ad: ad}
	if len(ad.ContextID) > 0 {
		rmKey := w.keys.removed(provider, ad.ContextID)
		removed, err := cb.removed(ctx, rmKey)
		if err != nil {
			return s, fmt.Errorf("ingest: walk %s: %w", w.publisher, err)
		}
		if removed {
			p.flags |= flagRemoved
		}
		// A removal (verified above) hides the older advertisements of
		// its context.
		if ad.IsRm && !removed {
			writes = append(writes, collectWrite{key: rmKey})
			cb.noteRemoved(rmKey)
		}
	}
	next := s
	next.Collected++
	next.Spilled += int64(len(block))
	next.Tail = ad.PreviousID
	writes = append(writes,
		collectWrite{key: w.keys.queue(s.Collected), value: p.encode()},
		collectWrite{key: w.keys.key(keyCount), value: intBytes(next.Collected)},
		collectWrite{key: w.keys.key(keySpilled), value: intBytes(int(next.Spilled))},
	)
	if next.Tail.Defined() {
		writes = append(writes, collectWrite{key: w.keys.key(keyTail), value: next.Tail.Bytes()})
	} else {
		writes = append(writes, collectWrite{key: w.keys.key(keyTail), del: true})
	}
	cb.add(writes...)
	w.setState(next)
	if n := w.walked.Add(1); n%10_000 == 0 {
		w.log.Info("walking", "cid", c.String(), "collected", next.Collected, "head", s.Head.String())
	}
	if h := w.cfg.hooks.AdWalked; h != nil {
		h(w.publisher, c)
	}
	return next, nil
}

// collectBatch gathers the writes of several collected advertisements into
// one datastore commit. go-ds-leveldb syncs every commit, and a commit per
// advertisement would bound a walk of small advertisements by the disk's
// fsync rate. Until it commits, the walker reads the keys it holds through
// it. A process killed before a commit fetches those advertisements again
// on resume, which is harmless: nothing is applied before the commit.
type collectBatch struct {
	ds      datastore.Batching
	writes  []collectWrite
	held    map[datastore.Key]bool // keys written, true if put (not deleted)
	started time.Time
	// rm holds the walk's rm/ keys, all of them while rmAll: an
	// advertisement with a context then needs no datastore lookup to
	// know whether a newer one removed it. Past maxHeldRemovals keys
	// the set is dropped, and lookups go to the datastore.
	rmDir    string
	rm       map[datastore.Key]struct{}
	rmAll    bool
	rmLoaded bool
}

// maxHeldRemovals bounds the rm/ keys a collectBatch holds: some 10 MiB.
// A variable for tests.
var maxHeldRemovals = 1 << 16

// loadRemovals reads the walk's rm/ keys into cb.rm, unless there are
// more than maxHeldRemovals.
func (cb *collectBatch) loadRemovals(ctx context.Context) error {
	cb.rmLoaded = true
	res, err := cb.ds.Query(ctx, query.Query{Prefix: cb.rmDir, KeysOnly: true})
	if err != nil {
		return err
	}
	defer res.Close()
	rm := make(map[datastore.Key]struct{})
	for r := range res.Next() {
		if r.Error != nil {
			return r.Error
		}
		if len(rm) == maxHeldRemovals {
			return nil // too many: look them up
		}
		rm[datastore.RawKey(r.Key)] = struct{}{}
	}
	cb.rm, cb.rmAll = rm, true
	return nil
}

// removed reports whether the rm/ key k exists, written or not.
func (cb *collectBatch) removed(ctx context.Context, k datastore.Key) (bool, error) {
	if !cb.rmLoaded {
		if err := cb.loadRemovals(ctx); err != nil {
			return false, err
		}
	}
	if cb.rmAll {
		_, ok := cb.rm[k]
		return ok, nil
	}
	return cb.has(ctx, k)
}

// noteRemoved records that the rm/ key k is written.
func (cb *collectBatch) noteRemoved(k datastore.Key) {
	if !cb.rmAll {
		return
	}
	if len(cb.rm) >= maxHeldRemovals {
		cb.rm, cb.rmAll = nil, false
		return
	}
	cb.rm[k] = struct{}{}
}

// cycleCheck finds an advertisement CID met twice in a walk, with Brent's
// algorithm: it remembers one CID, compares each CID met with it, and
// moves it to the CID met after 1, 2, 4, 8 ... steps. A walk that has
// gone round a cycle of n advertisements (from any point of the chain)
// meets the CID it remembers again within about 2n more steps; the depth
// and spill limits bound it meanwhile, and whichever fails first
// abandons the walk. It holds no state on disk and reads none: a walk
// resumed by a new process starts checking again from where it resumes. Versions
// before it wrote a seen/<cid> marker per advertisement and looked it up
// for each advertisement collected, for a cycle that verified blocks
// cannot form (see "Failures" in the package documentation).
type cycleCheck struct {
	mark         cid.Cid
	steps, power int
}

// meet reports whether c is the CID remembered, that is, whether the walk
// has come back to it.
func (cc *cycleCheck) meet(c cid.Cid) bool {
	if cc.mark.Defined() && c.Equals(cc.mark) {
		return true
	}
	cc.steps++
	if cc.steps >= cc.power {
		cc.mark, cc.power, cc.steps = c, max(1, 2*cc.power), 0
	}
	return false
}

type collectWrite struct {
	key   datastore.Key
	value []byte
	del   bool
}

// Commit a collect batch at this many writes or after this long.
const (
	collectBatchWrites = 256
	collectBatchAge    = 250 * time.Millisecond
)

func (cb *collectBatch) add(ws ...collectWrite) {
	if len(cb.writes) == 0 {
		cb.started = time.Now()
		if cb.held == nil {
			cb.held = make(map[datastore.Key]bool)
		}
	}
	for _, w := range ws {
		cb.writes = append(cb.writes, w)
		cb.held[w.key] = !w.del
	}
}

// has reports whether key exists, counting the writes not yet committed.
func (cb *collectBatch) has(ctx context.Context, key datastore.Key) (bool, error) {
	if put, ok := cb.held[key]; ok {
		return put, nil
	}
	return cb.ds.Has(ctx, key)
}

func (cb *collectBatch) full() bool {
	return len(cb.writes) >= collectBatchWrites || (len(cb.writes) > 0 && time.Since(cb.started) >= collectBatchAge)
}

// commit writes what cb holds in one atomic batch.
func (cb *collectBatch) commit(ctx context.Context) error {
	if len(cb.writes) == 0 {
		return nil
	}
	b, err := cb.ds.Batch(ctx)
	if err != nil {
		return err
	}
	// Every advertisement rewrites the count, the bytes spilled and the
	// tail: only the last write of a key goes into the batch.
	last := make(map[datastore.Key]int, len(cb.held))
	for i, w := range cb.writes {
		last[w.key] = i
	}
	for i, w := range cb.writes {
		if last[w.key] != i {
			continue
		}
		if w.del {
			err = b.Delete(ctx, w.key)
		} else {
			err = b.Put(ctx, w.key, w.value)
		}
		if err != nil {
			return err
		}
	}
	if err := b.Commit(ctx); err != nil {
		return err
	}
	cb.writes = cb.writes[:0]
	clear(cb.held)
	return nil
}

// abandon drops the walk in progress, leaving the last head as it was.
func (w *Walker) abandon(ctx context.Context, s WalkState) error {
	b, err := w.ds.Batch(ctx)
	if err == nil {
		err = w.discard(ctx, b)
	}
	if err == nil {
		err = b.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("ingest: abandon walk of %s: %w", w.publisher, err)
	}
	w.setState(WalkState{LastHead: s.LastHead})
	return nil
}

// spillLimit is the most bytes of blocks the walk described by s may hold
// pending: less for a publisher none of whose walks has finished yet.
func (w *Walker) spillLimit(s WalkState) int64 {
	if s.LastHead.Defined() {
		return w.cfg.spillWalk
	}
	return w.cfg.spillFirst
}

// abandoned reports whether a walk that failed collecting with err is
// dropped rather than kept for a retry: anything but a failure to fetch
// (which may pass) or a cancelled walk. Advertisements that do not verify,
// do not decode or form a cycle are not the publisher's to give, and a
// walk over a limit would only meet it again.
func abandoned(err error) bool {
	return !errors.Is(err, ErrFetch) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		(errors.Is(err, ErrSignature) || errors.Is(err, ErrInvalidBlock) || errors.Is(err, ErrCycle) ||
			errors.Is(err, ErrDepthLimit) || errors.Is(err, ErrSpillLimit))
}

// verify checks ad's signature against the signature policy: the signer
// must be the provider or the publisher.
func (w *Walker) verify(ad *schema.Advertisement, provider peer.ID) (peer.ID, error) {
	return checkSigner(ad, provider, w.publisher, w.cfg.allowUnsigned)
}
