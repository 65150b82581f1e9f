package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/multiformats/go-multihash"
)

// testManyContexts puts many small contexts, as publishers that make one
// context per deal do, then updates, removes and re-puts some of them and
// reads everything back, twice. A store that keeps its records on disk
// behind a cache smaller than this working set (run the suite with a cache
// of a record or two) must answer from the engine whatever the cache has
// evicted, and never from a copy an update or removal replaced.
func testManyContexts(t *testing.T, s store.Store) {
	ctx := context.Background()
	const (
		contexts  = 300
		providers = 3
	)
	shared := Multihash("many-shared", 0)
	val := func(i int, md string) store.Value {
		return value(fmt.Sprint("many-", i%providers), fmt.Sprint("deal-", i), md)
	}
	own := func(i int) multihash.Multihash { return Multihash("many-own", i) }
	want := make(map[int]store.Value, contexts) // the live contexts
	for i := range contexts {
		v := val(i, "md")
		mustPut(t, s, v, own(i), shared)
		want[i] = v
	}
	// Every fifth context gets new metadata, by UpdateMetadata or by a
	// Put; every seventh is removed; provider 2 goes whole.
	for i := 0; i < contexts; i += 5 {
		v := val(i, fmt.Sprint("md-updated-", i))
		if i%10 == 0 {
			if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, v.Metadata); err != nil {
				t.Fatalf("UpdateMetadata(%s): %v", v.ContextID, err)
			}
		} else {
			mustPut(t, s, v, own(i))
		}
		want[i] = v
	}
	for i := 0; i < contexts; i += 7 {
		v := want[i]
		if err := s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID); err != nil {
			t.Fatalf("RemoveProviderContext(%s): %v", v.ContextID, err)
		}
		delete(want, i)
	}
	if err := s.RemoveProvider(ctx, val(2, "").ProviderID); err != nil {
		t.Fatalf("RemoveProvider: %v", err)
	}
	for i := range contexts {
		if i%providers == 2 {
			delete(want, i)
		}
	}
	// Contexts removed, put again: new values, not the old ones back.
	for i := 0; i < contexts; i += 21 {
		v := val(i, "md-again")
		mustPut(t, s, v, own(i))
		want[i] = v
	}
	check := func(round int) {
		t.Helper()
		var onShared []store.Value
		for i := range contexts {
			v, live := want[i]
			if !live {
				expectValues(t, s, own(i))
				if err := s.UpdateMetadata(ctx, val(i, "").ProviderID, val(i, "").ContextID, []byte("x")); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("round %d: UpdateMetadata of removed context %d: %v, want ErrNotFound", round, i, err)
				}
				continue
			}
			expectValues(t, s, own(i), v)
			if i%21 != 0 { // those were removed and put again without it
				onShared = append(onShared, v)
			}
		}
		expectValues(t, s, shared, onShared...)
	}
	check(1)
	if sw, ok := s.(store.Sweeper); ok {
		if _, err := sw.Sweep(ctx); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
	}
	check(2)
}

// testUpdateWhileReading updates the metadata of a few contexts again and
// again while readers look them up: each reader must see every context's
// metadata only move forward, and, once the writers are done, the last
// metadata. A store that caches records must not put back a copy that an
// update replaced, also when it misses and reads the engine while the
// update lands.
func testUpdateWhileReading(t *testing.T, s store.Store) {
	ctx := context.Background()
	const (
		contexts = 4
		updates  = 150
		readers  = 3
	)
	mhs := Multihashes("update-reading", contexts)
	vals := make([]store.Value, contexts)
	for i := range vals {
		vals[i] = value("update-reading", fmt.Sprint("ctx-", i), fmt.Sprintf("md-%06d", 0))
		mustPut(t, s, vals[i], mhs[i])
	}
	stop := make(chan struct{})
	var readersWG, writersWG sync.WaitGroup
	for r := range readers {
		readersWG.Go(func() {
			seen := make([]string, contexts)
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (n + r) % contexts
				got, err := s.Get(ctx, mhs[i])
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				if len(got) != 1 {
					t.Errorf("Get(context %d): %s, want one value", i, fmtValues(got))
					return
				}
				md := string(got[0].Metadata)
				if md < seen[i] {
					t.Errorf("context %d: metadata %q read after %q: a replaced record came back", i, md, seen[i])
					return
				}
				seen[i] = md
			}
		})
	}
	for i := range contexts {
		writersWG.Go(func() {
			for u := 1; u <= updates; u++ {
				if err := s.UpdateMetadata(ctx, vals[i].ProviderID, vals[i].ContextID, fmt.Appendf(nil, "md-%06d", u)); err != nil {
					t.Errorf("UpdateMetadata: %v", err)
					return
				}
			}
		})
	}
	writersWG.Wait()
	close(stop)
	readersWG.Wait()
	for i := range vals {
		vals[i].Metadata = fmt.Appendf(nil, "md-%06d", updates)
		expectValues(t, s, mhs[i], vals[i])
	}
}
