package kv

// The cache in front of the value records and the context index.

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// cache is a bounded map from K to V, split into shards that each have
// their own lock and evict by CLOCK (second chance): a hit only sets the
// entry's reference bit, under the shard's read lock, so readers of
// different entries contend on nothing but that lock's reader count, and
// readers of one shard never wait for each other.
//
// It caches what the engine holds; the engine is the truth. A writer of a
// key (writers are serialised among themselves by the caller) calls begin,
// which drops the key's entry, changes the engine, then calls set or
// remove, which end the write. Until then every reader of the key misses
// and reads the engine, so that none is served the value the write
// replaces once another has read the new one from the engine, between the
// write's commit and its set. A reader that misses offers what it read
// with fill, which a shard refuses while a write is in flight in it or if
// one began since the reader's get: the reader may have read the engine
// before that write landed, and must not put back what it replaced.
type cache[K comparable, V any] struct {
	shards []shard[K, V]
	hash   func(K) uint64
	shift  uint // hash >> shift is the shard
}

type shard[K comparable, V any] struct {
	mu      sync.RWMutex
	m       map[K]*centry[K, V]
	ring    []*centry[K, V] // the clock: every entry once, in any order
	hand    int
	size    int64 // cost of the entries held
	max     int64
	epoch   uint64 // bumped by every begin, set and remove
	writing int    // writes begun and not ended
	_       [32]byte
}

type centry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
	slot int // index in ring
	ref  atomic.Bool
	// dead is set when the entry leaves the cache, for whatever reason: a
	// version built on it (see getVersion) ends then.
	dead atomic.Bool
}

// minShardBudget keeps a small cache in few shards, so that a budget of a
// few records still holds a few.
const minShardBudget = 64 << 10

// newCache returns a cache holding entries of total cost up to budget;
// with budget 0 it holds nothing. hash must spread keys over all 64 bits.
func newCache[K comparable, V any](budget int64, hash func(K) uint64) *cache[K, V] {
	n := 1
	for n < 64 && budget/int64(2*n) >= minShardBudget {
		n *= 2
	}
	c := &cache[K, V]{shards: make([]shard[K, V], n), hash: hash, shift: uint(64 - bits.TrailingZeros(uint(n)))}
	for i := range c.shards {
		c.shards[i].m = make(map[K]*centry[K, V])
		c.shards[i].max = budget / int64(n)
	}
	return c
}

func (c *cache[K, V]) shard(k K) *shard[K, V] {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[c.hash(k)>>c.shift]
}

// get returns the value of k. On a miss it returns the shard's epoch, to
// pass to fill.
func (c *cache[K, V]) get(k K) (v V, ok bool, epoch uint64) {
	s := c.shard(k)
	s.mu.RLock()
	return s.found(s.m[k])
}

// found ends a lookup that holds s's read lock and found e (nil: a miss):
// it marks a hit referenced and returns its value, or a miss with the
// shard's epoch, and releases the lock.
func (s *shard[K, V]) found(e *centry[K, V]) (v V, ok bool, epoch uint64) {
	if e == nil {
		epoch = s.epoch
		s.mu.RUnlock()
		return v, false, epoch
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	v = e.val
	s.mu.RUnlock()
	return v, true, 0
}

// getEntryBytes is getBytes returning the entry found, or nil and the
// shard's epoch. The caller reads the entry's value after the shard's lock
// is released, which is safe only in a cache that never sets a value in
// place (set on an existing key): the lookup cache, whose writers only
// drop entries.
func getEntryBytes[V any](c *cache[string, V], k []byte, hashBytes func([]byte) uint64) (*centry[string, V], uint64) {
	s := shardOfBytes(c, k, hashBytes)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.m[string(k)]
	if e == nil {
		return nil, s.epoch
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	return e, 0
}

// shardOfBytes is the shard of key k of a cache keyed by strings, given as
// bytes. hashBytes(k) must equal c.hash(string(k)).
func shardOfBytes[V any](c *cache[string, V], k []byte, hashBytes func([]byte) uint64) *shard[string, V] {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[hashBytes(k)>>c.shift]
}

// getBytes is get for a cache keyed by strings, with the key as bytes: it
// does not allocate the string. hashBytes(k) must equal c.hash(string(k)).
func getBytes[V any](c *cache[string, V], k []byte, hashBytes func([]byte) uint64) (v V, ok bool, epoch uint64) {
	s := shardOfBytes(c, k, hashBytes)
	s.mu.RLock()
	return s.found(s.m[string(k)])
}

// fill adds k, read from the engine after the get that returned epoch,
// unless a writer has changed the shard since or k is there already. It
// returns the entry it added, or nil.
func (c *cache[K, V]) fill(k K, v V, cost int64, epoch uint64) *centry[K, V] {
	s := c.shard(k)
	if cost > s.max {
		return nil
	}
	var e *centry[K, V]
	s.mu.Lock()
	if s.epoch == epoch && s.writing == 0 && s.m[k] == nil {
		e = s.add(k, v, cost)
	}
	s.mu.Unlock()
	return e
}

// begin starts a write of k, which set or remove ends: it drops k's entry,
// and until the end no fill is taken in k's shard.
func (c *cache[K, V]) begin(k K) {
	s := c.shard(k)
	s.mu.Lock()
	s.epoch++
	s.writing++
	if e := s.m[k]; e != nil {
		s.drop(e)
	}
	s.mu.Unlock()
}

// end ends a write; the caller holds mu.
func (s *shard[K, V]) end() {
	s.epoch++
	if s.writing > 0 {
		s.writing--
	}
}

// set makes v the value of k and ends the write of k begun with begin.
func (c *cache[K, V]) set(k K, v V, cost int64) {
	s := c.shard(k)
	s.mu.Lock()
	s.end()
	e := s.m[k]
	switch {
	case e != nil && cost <= e.cost:
		// In place (a set without begin): readers copy val out under
		// the read lock.
		e.val = v
		s.size += cost - e.cost
		e.cost = cost
	case e != nil:
		s.drop(e)
		fallthrough
	default:
		if cost <= s.max {
			s.add(k, v, cost)
		}
	}
	s.mu.Unlock()
}

// remove drops k and ends the write of k begun with begin.
func (c *cache[K, V]) remove(k K) {
	s := c.shard(k)
	s.mu.Lock()
	s.end()
	if e := s.m[k]; e != nil {
		s.drop(e)
	}
	s.mu.Unlock()
}

// len returns the number of entries and their total cost.
func (c *cache[K, V]) len() (n int, cost int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		cost += s.size
		s.mu.RUnlock()
	}
	return n, cost
}

// add inserts a new entry, evicting until it fits; the caller holds mu and
// has checked that cost <= max.
func (s *shard[K, V]) add(k K, v V, cost int64) *centry[K, V] {
	for s.size+cost > s.max {
		e := s.ring[s.hand]
		if e.ref.Load() {
			e.ref.Store(false)
			s.hand++
		} else {
			s.drop(e)
		}
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
	}
	e := &centry[K, V]{key: k, val: v, cost: cost, slot: len(s.ring)}
	s.ring = append(s.ring, e)
	s.m[k] = e
	s.size += cost
	return e
}

// drop removes e; the caller holds mu. The last entry of the ring takes
// e's slot.
func (s *shard[K, V]) drop(e *centry[K, V]) {
	last := len(s.ring) - 1
	moved := s.ring[last]
	s.ring[e.slot] = moved
	moved.slot = e.slot
	s.ring[last] = nil
	s.ring = s.ring[:last]
	if s.hand >= len(s.ring) {
		s.hand = 0
	}
	delete(s.m, e.key)
	s.size -= e.cost
	e.dead.Store(true)
}
