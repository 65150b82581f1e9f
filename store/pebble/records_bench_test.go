package pebble_test

import (
	"sync"
	"testing"

	"github.com/indexkit/indexkit/store"
	ikpebble "github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

// BenchmarkGetParallel is BenchmarkGet from GOMAXPROCS goroutines: the
// record cache is read by all of them at once.
func BenchmarkGetParallel(b *testing.B) {
	storetest.CompareGetParallel(b, openStore, func(b *testing.B) storetest.Raw {
		r := openRaw(b).(*raw)
		return parallelRaw{r, &sync.Pool{New: func() any { c := *r; c.key = nil; return &c }}}
	})
}

// parallelRaw is raw with a Get safe for concurrent use: each call reads
// through a pooled copy of raw, with a key buffer of its own.
type parallelRaw struct {
	*raw
	copies *sync.Pool
}

func (p parallelRaw) Get(mh multihash.Multihash, id uint64) (bool, error) {
	r := p.copies.Get().(*raw)
	defer p.copies.Put(r)
	return r.Get(mh, id)
}

// BenchmarkGetUncached is BenchmarkGet with no record cache: every hit
// reads its record from Pebble too, the cost of a cache miss.
func BenchmarkGetUncached(b *testing.B) {
	storetest.CompareGet(b, func(b *testing.B) store.Store {
		s, err := ikpebble.Open(b.TempDir(), ikpebble.WithRecordCache(0))
		if err != nil {
			b.Fatal(err)
		}
		return settled{s}
	}, openRaw)
}
