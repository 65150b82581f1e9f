package scatter

import (
	"container/list"
	"sync"
	"time"

	"github.com/indexkit/indexkit/scatter/find"
)

// resultCache is a size-bounded LRU of complete find answers with a TTL;
// empty answers ("not found" from every backend asked) get their own,
// usually shorter, TTL. It reads time.Now, which testing/synctest fakes.
type resultCache struct {
	max         int
	ttl, negTTL time.Duration

	mu     sync.Mutex
	m      map[string]*list.Element
	lru    list.List // of *cacheEntry, most recently used first
	hits   uint64
	misses uint64
}

type cacheEntry struct {
	key     string
	results []find.ProviderResult
	expires time.Time
}

func newResultCache(entries int, ttl, negTTL time.Duration) *resultCache {
	return &resultCache{max: entries, ttl: ttl, negTTL: negTTL, m: make(map[string]*list.Element, min(entries, 1024))}
}

// get returns the cached answer for key, counting a hit or a miss.
func (c *resultCache) get(key []byte, now time.Time) ([]find.ProviderResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[string(key)]
	if ok {
		e := el.Value.(*cacheEntry)
		if now.Before(e.expires) {
			c.lru.MoveToFront(el)
			c.hits++
			return e.results, true
		}
		c.lru.Remove(el)
		delete(c.m, e.key)
	}
	c.misses++
	return nil, false
}

// put caches a complete answer for key; the cache keeps results, which must
// not be modified afterwards.
func (c *resultCache) put(key []byte, results []find.ProviderResult, now time.Time) {
	ttl := c.ttl
	if len(results) == 0 {
		ttl = c.negTTL
	}
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[string(key)]; ok {
		e := el.Value.(*cacheEntry)
		e.results, e.expires = results, now.Add(ttl)
		c.lru.MoveToFront(el)
		return
	}
	for c.lru.Len() >= c.max {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.m, oldest.Value.(*cacheEntry).key)
	}
	e := &cacheEntry{key: string(key), results: results, expires: now.Add(ttl)}
	c.m[e.key] = c.lru.PushFront(e)
}

func (c *resultCache) stats() (hits, misses uint64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.lru.Len()
}
