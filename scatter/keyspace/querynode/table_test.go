package querynode_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/store"
)

// A copy by tables under live writes that land between a frame's Puts
// passing the guard and the table's ingest: removals (which the table,
// newer than everything, would undo but for the re-check at ingest),
// removals put back live, a metadata update and a context removed. The
// joiner ends exact, with one table for the whole copy, a table per
// frame, and key by key.
func TestCopyTablesLiveWrites(t *testing.T) {
	for _, kind := range []string{"pebble", "pebble-prefix"} {
		for _, mode := range []struct {
			name string
			mod  func(*querynode.Config)
		}{
			{"one-table", func(*querynode.Config) {}},
			{"table-per-frame", func(c *querynode.Config) { c.CopyTableKeys = 1 }},
			{"key-by-key", func(c *querynode.Config) { c.CopyKeyByKey = true }},
		} {
			t.Run(kind+"/"+mode.name, func(t *testing.T) {
				ch := newChange(t, kind, []string{"q1", "q2"}, "q3", 2)
				q3 := ch.c["q3"]
				q3.close(t)
				startNode(t, q3, ch.l2, mode.mod)
				gained := ch.gained(t, "q3")
				if len(gained) < 60 {
					t.Fatalf("only %d keys gained", len(gained))
				}
				var live []keyspace.Op
				for p := 1; p <= 3; p++ {
					for c := 1; c <= 4; c++ {
						live = append(live, removeOp(t, p, c, gained[:30]...))
					}
				}
				live = append(live,
					removeOp(t, 1, 1, gained[30:40]...),
					putOp(t, 1, 1, "md-1-1-back", gained[30:35]...),
					keyspace.Op{Kind: keyspace.OpUpdateMetadata, Value: store.Value{ProviderID: provider(t, 2), ContextID: []byte{1}, Metadata: []byte("md-2-1-live")}},
					keyspace.Op{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: provider(t, 3), ContextID: []byte{2}}},
					putOp(t, 3, 2, "md-3-2-again", gained[50:52]...),
				)
				ch.apply(live)
				r := route(t, ch.l2, live)
				var once sync.Once
				hooked := false
				querynode.SetCopyHook(q3.Node, func(source string, frame int) {
					if frame < 2 {
						return // frame 1 holds the provider records
					}
					once.Do(func() {
						hooked = true
						ch.w.send(t, q3, 2, r["q3"])
					})
				})
				if code, body := postEpoch(t, q3.srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
					t.Fatalf("copy: %d %s", code, body)
				}
				if tk := waitTask(t, q3, 2, copyTask); tk.Error != "" || tk.Keys == 0 {
					t.Fatalf("copy: %+v", tk)
				}
				if !hooked {
					t.Fatal("the live writes were not sent during the copy")
				}
				ch.w.send(t, ch.c["q1"], 2, r["q1"])
				ch.w.send(t, ch.c["q2"], 2, r["q2"])
				ch.check(t, "q3")
			})
		}
	}
}

// A model test of the copy by tables: at every frame of the copy, a random
// batch of live writes (removals, puts of gained keys, metadata updates,
// removed contexts and providers) reaches the joiner before the sources;
// the joiner ends exact against the oracle, whatever the seed, with one
// table and with a table per frame.
func TestCopyTablesModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		for _, mode := range []struct {
			name string
			mod  func(*querynode.Config)
		}{
			{"one-table", func(*querynode.Config) {}},
			{"table-per-frame", func(c *querynode.Config) { c.CopyTableKeys = 1 }},
		} {
			kind := []string{"pebble", "pebble-prefix"}[seed%2]
			t.Run(fmt.Sprintf("%s/seed%d/%s", kind, seed, mode.name), func(t *testing.T) {
				ch := newChange(t, kind, []string{"q1", "q2"}, "q3", 2)
				q3 := ch.c["q3"]
				q3.close(t)
				startNode(t, q3, ch.l2, mode.mod)
				gained := ch.gained(t, "q3")
				rng := rand.New(rand.NewPCG(seed, 7))
				pick := func(n int) []int {
					out := make([]int, n)
					for i := range out {
						out[i] = gained[rng.IntN(len(gained))]
					}
					return out
				}
				randomOps := func() []keyspace.Op {
					var ops []keyspace.Op
					for range 1 + rng.IntN(6) {
						p, c := 1+rng.IntN(3), 1+rng.IntN(5)
						switch r := rng.IntN(10); {
						case r < 4:
							ops = append(ops, removeOp(t, p, c, pick(1+rng.IntN(20))...))
						case r < 7:
							ops = append(ops, putOp(t, p, c, fmt.Sprintf("md-live-%d", rng.IntN(1000)), pick(1+rng.IntN(10))...))
						case r < 8:
							ops = append(ops, keyspace.Op{Kind: keyspace.OpUpdateMetadata, Value: store.Value{ProviderID: provider(t, p), ContextID: []byte{byte(c)}, Metadata: fmt.Appendf(nil, "md-up-%d", rng.IntN(1000))}})
						case r < 9:
							ops = append(ops, keyspace.Op{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: provider(t, p), ContextID: []byte{byte(c)}}})
						default:
							ops = append(ops, keyspace.Op{Kind: keyspace.OpRemoveProvider, Value: store.Value{ProviderID: provider(t, p)}})
						}
					}
					return ops
				}
				var (
					mu   sync.Mutex
					late []map[string][]keyspace.Op
				)
				live := func() {
					ops := randomOps()
					ch.apply(ops)
					r := route(t, ch.l2, ops)
					ch.w.send(t, q3, 2, r["q3"])
					late = append(late, r)
				}
				live()
				querynode.SetCopyHook(q3.Node, func(string, int) {
					mu.Lock()
					defer mu.Unlock()
					live()
				})
				if code, body := postEpoch(t, q3.srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
					t.Fatalf("copy: %d %s", code, body)
				}
				if tk := waitTask(t, q3, 2, copyTask); tk.Error != "" {
					t.Fatalf("copy: %+v", tk)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, r := range late {
					ch.w.send(t, ch.c["q1"], 2, r["q1"])
					ch.w.send(t, ch.c["q2"], 2, r["q2"])
				}
				ch.check(t, "q3")
			})
		}
	}
}
