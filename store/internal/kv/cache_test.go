package kv

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestCacheBudget(t *testing.T) {
	for _, tc := range []struct {
		budget int64
		shards int
	}{{0, 1}, {700, 1}, {128<<10 - 1, 1}, {128 << 10, 2}, {256 << 10, 4}, {32 << 20, 64}, {1 << 40, 64}} {
		c := newCache[uint64, int](tc.budget, hashID)
		if len(c.shards) != tc.shards {
			t.Errorf("budget %d: %d shards, want %d", tc.budget, len(c.shards), tc.shards)
		}
	}
	c := newCache[uint64, int](1000, hashID)
	for i := range uint64(500) {
		_, ok, epoch := c.get(i)
		if ok {
			t.Fatalf("key %d found before it was added", i)
		}
		c.fill(i, int(i), 30, epoch)
		if n, cost := c.len(); cost > 1000 || n > 33 {
			t.Fatalf("after %d fills: %d entries of cost %d, over the budget of 1000", i+1, n, cost)
		}
	}
	if v, ok, _ := c.get(499); !ok || v != 499 {
		t.Fatalf("the last key filled: %d, %v", v, ok)
	}
	c.fill(1000, 1000, 1001, 0) // larger than the whole cache
	if _, ok, _ := c.get(1000); ok {
		t.Fatal("an entry larger than the budget was cached")
	}
	z := newCache[uint64, int](0, hashID)
	z.set(1, 1, 1)
	if _, ok, _ := z.get(1); ok {
		t.Fatal("a cache of budget 0 holds an entry")
	}
}

// A key read since the hand last passed survives the next eviction; one
// not read goes.
func TestCacheSecondChance(t *testing.T) {
	c := newCache[uint64, int](100, hashID)
	for i := range uint64(10) {
		c.set(i, int(i), 10)
	}
	c.get(0)
	c.set(10, 10, 10) // evicts 1: 0 had its bit set
	if _, ok, _ := c.get(0); !ok {
		t.Fatal("a key read just before the eviction was evicted")
	}
	if _, ok, _ := c.get(1); ok {
		t.Fatal("the first key not read was kept")
	}
	if n, _ := c.len(); n != 10 {
		t.Fatalf("%d entries, want 10", n)
	}
}

// A fill from a read that began before a set or remove of its shard is
// refused: it may have read what the write replaced.
func TestCacheFillAfterWrite(t *testing.T) {
	c := newCache[string, int](1000, hashString) // one shard
	_, _, epoch := c.get("a")
	c.begin("a")
	c.set("a", 2, 1) // the writer's new value lands after the read began
	c.fill("a", 1, 1, epoch)
	if v, _, _ := c.get("a"); v != 2 {
		t.Fatalf("a fill replaced a newer set: got %d, want 2", v)
	}
	_, _, epoch = c.get("b")
	c.begin("a")
	c.remove("a")
	c.fill("b", 1, 1, epoch)
	if _, ok, _ := c.get("b"); ok {
		t.Fatal("a fill begun before a remove in its shard was taken")
	}
	_, _, epoch = c.get("b")
	c.fill("b", 1, 1, epoch)
	if v, ok, _ := getBytes(c, []byte("b"), hashBytes); !ok || v != 1 {
		t.Fatalf("a fill with no write since its get was refused: %d, %v", v, ok)
	}
}

// While a write is in flight (between begin and its set), no fill is
// taken, even one whose get came after begin: the reader may have read the
// engine before the write's commit, while another reader, after it, has
// already seen the new value there.
func TestCacheFillDuringWrite(t *testing.T) {
	c := newCache[string, int](1000, hashString)
	c.begin("a")
	_, _, epoch := c.get("a")
	c.fill("a", 1, 1, epoch) // read before the commit
	if _, ok, _ := c.get("a"); ok {
		t.Fatal("a fill was taken while a write was in flight")
	}
	c.set("a", 2, 1)
	if v, _, _ := c.get("a"); v != 2 {
		t.Fatalf("after the write: %d, want 2", v)
	}
}

// A write drops the key's entry at its begin: between the write's commit
// and its set, a reader that has read the new value from the engine must
// not be served the old one from the cache by its next get (a CI run's
// UpdateWhileReading on LevelDB, whose synced commits make that moment
// long, saw it).
func TestCacheWriteHidesOldEntry(t *testing.T) {
	c := newCache[string, int](1000, hashString)
	_, _, epoch := c.get("a")
	c.fill("a", 1, 1, epoch)
	c.begin("a")
	// The commit lands here; a reader reads 2 from the engine.
	if v, ok, _ := c.get("a"); ok {
		t.Fatalf("during the write the cache serves %d, the value it replaces", v)
	}
	c.set("a", 2, 1)
	if v, _, _ := c.get("a"); v != 2 {
		t.Fatalf("after the write: %d, want 2", v)
	}
}

// Readers, fillers and writers at once, for -race, on a cache small
// enough to evict all the time: a key only ever holds its own values.
func TestCacheConcurrent(t *testing.T) {
	c := newCache[uint64, string](400<<10, hashID)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 20000 {
				k := r.Uint64N(5000)
				v, ok, epoch := c.get(k)
				switch {
				case ok && v[:len(fmt.Sprint(k))+1] != fmt.Sprint(k, "/"):
					t.Errorf("key %d holds %q", k, v)
					return
				case !ok:
					c.fill(k, fmt.Sprint(k, "/fill"), 100, epoch)
				case r.IntN(10) == 0:
					c.begin(k)
					c.set(k, fmt.Sprint(k, "/set"), 100)
				case r.IntN(10) == 0:
					c.begin(k)
					c.remove(k)
				}
			}
		})
	}
	wg.Wait()
	if _, cost := c.len(); cost > 400<<10 {
		t.Fatalf("cost %d over the budget", cost)
	}
}

// getBytes finds what get finds, in a cache of many shards.
func TestCacheGetBytes(t *testing.T) {
	c := newCache[string, int](32<<20, hashString)
	for i := range 1000 {
		c.set(fmt.Sprint("key-", i), i, 100)
	}
	for i := range 1000 {
		if v, ok, _ := getBytes(c, fmt.Appendf(nil, "key-%d", i), hashBytes); !ok || v != i {
			t.Fatalf("getBytes(key-%d) = %d, %v", i, v, ok)
		}
	}
}
