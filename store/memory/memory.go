package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"iter"
	"sync"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

const (
	// numShards is the number of index shards; a power of two.
	numShards = 256

	// ctxCheckEvery is how many multihashes a Put or Remove writes between
	// checks of its context, like the disk backends' batch size.
	ctxCheckEvery = 4096

	// scanChunk is how many multihashes All reads under a shard lock before
	// it releases the lock and yields them.
	scanChunk = 1024
)

// Store is an in-memory [store.Store]. The zero value is not usable; call
// [New].
type Store struct {
	// opMu guards the fields below against Close: every call holds it shared.
	opMu   sync.RWMutex
	closed bool

	seed   maphash.Seed
	shards *[numShards]shard

	recs records

	provMu    sync.RWMutex
	providers map[peer.ID]store.ProviderInfo
	provBytes int64
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Sweeper = (*Store)(nil)
	_ store.Sampler = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	s := &Store{
		seed:      maphash.MakeSeed(),
		shards:    new([numShards]shard),
		providers: make(map[peer.ID]store.ProviderInfo),
	}
	for i := range s.shards {
		s.shards[i].init()
	}
	s.recs.init()
	return s
}

func wrap(op string, err error) error {
	return fmt.Errorf("memory: %s: %w", op, err)
}

// begin takes the shared close guard. It fails if the store is closed or ctx
// is done; on success the caller must call s.opMu.RUnlock.
func (s *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return wrap(op, err)
	}
	s.opMu.RLock()
	if s.closed {
		s.opMu.RUnlock()
		return wrap(op, store.ErrClosed)
	}
	return nil
}

func (s *Store) shardOf(mh []byte) *shard {
	return &s.shards[maphash.Bytes(s.seed, mh)&(numShards-1)]
}

// Put implements [store.Index].
func (s *Store) Put(ctx context.Context, v store.Value, mhs ...multihash.Multihash) error {
	if err := v.Validate(); err != nil {
		return wrap("put", err)
	}
	for _, mh := range mhs {
		if err := store.ValidateMultihash(mh); err != nil {
			return wrap("put", err)
		}
	}
	if err := s.begin(ctx, "put"); err != nil {
		return err
	}
	defer s.opMu.RUnlock()
	id, _ := s.recs.ensure(v, true)
	pop := s.recs.population(id)
	// One string per multihash, shared by the index and the population.
	keys := make([]string, 0, min(len(mhs), ctxCheckEvery))
	for i, mh := range mhs {
		if i > 0 && i%ctxCheckEvery == 0 {
			s.recs.popStrings.Add(int64(pop.add(keys))) // after the entries, like the disk backends
			keys = keys[:0]
			if err := ctx.Err(); err != nil {
				return wrap("put", err)
			}
		}
		k := string(mh)
		keys = append(keys, k)
		sh := s.shardOf(mh)
		sh.mu.Lock()
		sh.add(k, id)
		sh.mu.Unlock()
	}
	s.recs.popStrings.Add(int64(pop.add(keys)))
	return nil
}

// Get implements [store.Index].
func (s *Store) Get(ctx context.Context, mh multihash.Multihash) ([]store.Value, error) {
	if err := store.ValidateMultihash(mh); err != nil {
		return nil, wrap("get", err)
	}
	if err := s.begin(ctx, "get"); err != nil {
		return nil, err
	}
	defer s.opMu.RUnlock()
	// The IDs and their records are read under both locks (the shard's
	// first, as everywhere): a record removed between the two reads
	// could otherwise combine an index read from before a Put with the
	// records after a later removal, an answer the store never held.
	var buf [4]uint64
	sh := s.shardOf(mh)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	s.recs.mu.RLock()
	defer s.recs.mu.RUnlock()
	ids := sh.appendIDs(buf[:0], view(mh))
	if len(ids) == 0 {
		return nil, nil
	}
	vals := make([]store.Value, 0, len(ids))
	for _, id := range ids {
		if r := s.recs.byID[id]; r != nil {
			vals = append(vals, r.v)
		}
	}
	return vals, nil
}

// Remove implements [store.Index].
func (s *Store) Remove(ctx context.Context, provider peer.ID, contextID []byte, mhs ...multihash.Multihash) error {
	for _, mh := range mhs {
		if err := store.ValidateMultihash(mh); err != nil {
			return wrap("remove", err)
		}
	}
	if err := s.begin(ctx, "remove"); err != nil {
		return err
	}
	defer s.opMu.RUnlock()
	r := s.recs.lookup(provider, contextID)
	if r == nil {
		return nil
	}
	if pop := s.recs.population(r.id); pop != nil {
		s.recs.popStrings.Add(int64(pop.remove(mhs))) // before the entries
	}
	for i, mh := range mhs {
		if i > 0 && i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return wrap("remove", err)
			}
		}
		sh := s.shardOf(mh)
		sh.mu.Lock()
		sh.remove(view(mh), r.id)
		sh.mu.Unlock()
	}
	return nil
}

// RemoveProviderContext implements [store.Index]. It deletes the context's
// record only; its index entries stay until [Store.Sweep].
func (s *Store) RemoveProviderContext(ctx context.Context, provider peer.ID, contextID []byte) error {
	if err := s.begin(ctx, "remove provider context"); err != nil {
		return err
	}
	defer s.opMu.RUnlock()
	s.recs.removeContext(provider, contextID)
	return nil
}

// RemoveProvider implements [store.Index]. It deletes the provider's records
// only; their index entries stay until [Store.Sweep].
func (s *Store) RemoveProvider(ctx context.Context, provider peer.ID) error {
	if err := s.begin(ctx, "remove provider"); err != nil {
		return err
	}
	defer s.opMu.RUnlock()
	s.recs.removeProvider(provider)
	return nil
}

// UpdateMetadata implements [store.Index].
func (s *Store) UpdateMetadata(ctx context.Context, provider peer.ID, contextID, metadata []byte) error {
	if err := store.ValidateContext(contextID, metadata); err != nil {
		return wrap("update metadata", err)
	}
	if err := s.begin(ctx, "update metadata"); err != nil {
		return err
	}
	defer s.opMu.RUnlock()
	v := store.Value{ProviderID: provider, ContextID: contextID, Metadata: metadata}
	if _, ok := s.recs.ensure(v, false); !ok {
		return wrap("update metadata", store.ErrNotFound)
	}
	return nil
}

// Sample implements [store.Sampler].
func (s *Store) Sample(ctx context.Context, provider peer.ID, contextID []byte, pick func(n int) []int) ([]multihash.Multihash, error) {
	if err := s.begin(ctx, "sample"); err != nil {
		return nil, err
	}
	defer s.opMu.RUnlock()
	r := s.recs.lookup(provider, contextID)
	if r == nil {
		return nil, wrap("sample", store.ErrNotFound)
	}
	pop := s.recs.population(r.id)
	if pop == nil {
		return nil, wrap("sample", store.ErrNotFound) // removed meanwhile
	}
	mhs, err := pop.sample(pick)
	if err != nil {
		return nil, wrap("sample", err)
	}
	return mhs, nil
}

// All implements [store.Store]. It visits the shards in turn; for each it
// copies the shard's keys, then reads them back scanChunk at a time, and
// holds no lock while it yields. Multihashes whose values have all been
// removed are not yielded. The order is unspecified.
func (s *Store) All(ctx context.Context) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		for i := range numShards {
			if err := s.begin(ctx, "iterate"); err != nil {
				yield(store.Entry{}, err)
				return
			}
			sh := &s.shards[i]
			sh.mu.RLock()
			keys := sh.keys()
			sh.mu.RUnlock()
			s.opMu.RUnlock()
			for len(keys) > 0 {
				n := min(len(keys), scanChunk)
				entries, err := s.readEntries(ctx, sh, keys[:n])
				if err != nil {
					yield(store.Entry{}, err)
					return
				}
				for _, e := range entries {
					if !yield(e, nil) {
						return
					}
				}
				keys = keys[n:]
			}
		}
	}
}

// readEntries returns the live entries of keys, which belong to sh.
func (s *Store) readEntries(ctx context.Context, sh *shard, keys []string) ([]store.Entry, error) {
	if err := s.begin(ctx, "iterate"); err != nil {
		return nil, err
	}
	defer s.opMu.RUnlock()
	// offs[i] is where the IDs of keys[i] end in ids.
	ids := make([]uint64, 0, len(keys))
	offs := make([]int, len(keys))
	sh.mu.RLock()
	for i, k := range keys {
		ids = sh.appendIDs(ids, k)
		offs[i] = len(ids)
	}
	sh.mu.RUnlock()

	entries := make([]store.Entry, 0, len(keys))
	vals := make([]store.Value, 0, len(ids))
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	mhBuf := make([]byte, 0, n)
	s.recs.mu.RLock()
	start := 0
	for i, k := range keys {
		first := len(vals)
		for _, id := range ids[start:offs[i]] {
			if r := s.recs.byID[id]; r != nil {
				vals = append(vals, r.v)
			}
		}
		start = offs[i]
		if len(vals) > first {
			at := len(mhBuf)
			mhBuf = append(mhBuf, k...)
			entries = append(entries, store.Entry{
				Multihash: multihash.Multihash(mhBuf[at:len(mhBuf):len(mhBuf)]),
				Values:    vals[first:len(vals):len(vals)],
			})
		}
	}
	s.recs.mu.RUnlock()
	return entries, nil
}

// Sweep implements [store.Sweeper]. It deletes the index entries whose
// record was removed and returns how many it deleted. It works one shard at
// a time: it finds the dead entries under the shard's read lock, then deletes
// them under its write lock, so Get is blocked only briefly. IDs are never
// reused, so an entry found dead stays dead.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	if err := s.begin(ctx, "sweep"); err != nil {
		return 0, err
	}
	deleted := s.recs.deleted()
	s.opMu.RUnlock()
	if deleted == 0 {
		return 0, nil // no record was ever removed: nothing can dangle
	}
	var removed int64
	for i := range numShards {
		if err := s.begin(ctx, "sweep"); err != nil {
			return removed, err
		}
		sh := &s.shards[i]
		sh.mu.RLock()
		s.recs.mu.RLock()
		dead := sh.dead(s.recs.byID)
		s.recs.mu.RUnlock()
		sh.mu.RUnlock()
		if len(dead) > 0 {
			sh.mu.Lock()
			for _, d := range dead {
				if sh.remove(d.key, d.id) {
					removed++
				}
			}
			sh.mu.Unlock()
		}
		s.opMu.RUnlock()
	}
	return removed, nil
}

// Size implements [store.Store]. It returns an estimate of the bytes held;
// see the package documentation for what it counts.
func (s *Store) Size(ctx context.Context) (int64, error) {
	if err := s.begin(ctx, "size"); err != nil {
		return 0, err
	}
	defer s.opMu.RUnlock()
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.size()
		sh.mu.RUnlock()
	}
	n += s.recs.size() + s.recs.popSize()
	s.provMu.RLock()
	n += s.provBytes
	s.provMu.RUnlock()
	return n, nil
}

// Flush implements [store.Store]. Nothing is persisted, so it only reports
// whether the store is closed.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.begin(ctx, "flush"); err != nil {
		return err
	}
	s.opMu.RUnlock()
	return nil
}

// Close implements [store.Store]. It waits for calls in flight and drops
// everything the store holds. It is safe to call more than once.
func (s *Store) Close() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.shards = nil
	s.recs.drop()
	s.providers = nil
	return nil
}

// countLimit is the most keys [Store.CountEntries] checks one by one
// once a record was removed.
const countLimit = 1 << 17

// CountEntries returns the number of multihashes that have at least one
// live value: what [Store.All] yields. Until a record is removed it reads
// one counter per shard, so it is cheap to poll; after, it checks each
// multihash's IDs against the live records (entries removed but not yet
// swept do not count), up to [countLimit] multihashes, and beyond that
// returns an error wrapping [store.ErrNotCounted]. The find listener's GET
// /stats reports it as EntriesCount.
func (s *Store) CountEntries(ctx context.Context) (int64, error) {
	if err := s.begin(ctx, "count entries"); err != nil {
		return 0, err
	}
	defer s.opMu.RUnlock()
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += int64(len(sh.ids))
		sh.mu.RUnlock()
	}
	if s.recs.deleted() == 0 {
		return n, nil // nothing can dangle
	}
	if n > countLimit {
		return 0, wrap("count entries", fmt.Errorf("%d multihashes, over %d: %w", n, countLimit, store.ErrNotCounted))
	}
	var live int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		s.recs.mu.RLock()
		live += sh.live(s.recs.byID)
		s.recs.mu.RUnlock()
		sh.mu.RUnlock()
	}
	return live, nil
}
