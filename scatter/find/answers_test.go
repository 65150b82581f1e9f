package find_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
)

// answerState is what a find answer of one key shows: each context's
// metadata, and the provider's address.
type answerState struct {
	md   map[string]string
	addr string
}

// answerStep is one write of TestAnswersNeverStale's cycle for key k, and
// the state it leaves.
type answerStep struct {
	do    func(ctx context.Context, s store.Store, k, cycle int) error
	after func(prev answerState, k, cycle int) answerState
}

// answerProviders are the providers of the keys, one each.
var answerProviders = func() (ids [16]peer.ID) {
	for k := range ids {
		ids[k] = findPeer(panicTB{}, 1000+k)
	}
	return ids
}()

func answerProvider(k int) peer.ID { return answerProviders[k] }

// panicTB is a testing.TB for helpers run outside a test.
type panicTB struct{ testing.TB }

func (panicTB) Helper()                      {}
func (panicTB) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (panicTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

func answerAddr(k, cycle, step int) string {
	return fmt.Sprintf("/ip4/10.%d.%d.%d/tcp/80/http", k, cycle, step)
}

func answerValue(k int, name string, cycle int, md string) store.Value {
	return store.Value{ProviderID: answerProvider(k), ContextID: fmt.Appendf(nil, "%s-%03d", name, cycle), Metadata: []byte(md)}
}

func answerCtx(name string, cycle int) string { return fmt.Sprintf("%s-%03d", name, cycle) }

// answerCycle changes a key's answer through each of its sources: the
// key's index entries, a record's metadata, a context's removal, and the
// provider's addresses.
var answerCycle = []answerStep{
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			return s.Put(ctx, answerValue(k, "a", c, "1"), findMH(panicTB{}, k))
		},
		after: func(p answerState, _, c int) answerState {
			return answerState{map[string]string{answerCtx("a", c): "1"}, p.addr}
		},
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			return s.PutProvider(ctx, answerProviderInfo(k, answerAddr(k, c, 1)))
		},
		after: func(p answerState, k, c int) answerState { return answerState{p.md, answerAddr(k, c, 1)} },
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			v := answerValue(k, "a", c, "2")
			return s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, v.Metadata)
		},
		after: func(p answerState, _, c int) answerState {
			return answerState{map[string]string{answerCtx("a", c): "2"}, p.addr}
		},
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			return s.Put(ctx, answerValue(k, "b", c, "1"), findMH(panicTB{}, k))
		},
		after: func(p answerState, _, c int) answerState {
			return answerState{map[string]string{answerCtx("a", c): "2", answerCtx("b", c): "1"}, p.addr}
		},
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			v := answerValue(k, "a", c, "")
			return s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID)
		},
		after: func(p answerState, _, c int) answerState {
			return answerState{map[string]string{answerCtx("b", c): "1"}, p.addr}
		},
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			v := answerValue(k, "b", c, "")
			return s.Remove(ctx, v.ProviderID, v.ContextID, findMH(panicTB{}, k))
		},
		after: func(p answerState, _, _ int) answerState { return answerState{map[string]string{}, p.addr} },
	},
}

func answerProviderInfo(k int, addr string) store.ProviderInfo {
	return store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: answerProvider(k), Addrs: []multiaddr.Multiaddr{multiaddr.StringCast(addr)}}}
}

// answerStates returns the states of key k after each of its n writes,
// from the start (index 0).
func answerStates(k, n int) []answerState {
	st := []answerState{{map[string]string{}, answerAddr(k, 0, 0)}}
	for i := 1; i <= n; i++ {
		step := answerCycle[(i-1)%len(answerCycle)]
		st = append(st, step.after(st[i-1], k, (i-1)/len(answerCycle)))
	}
	return st
}

// TestAnswersNeverStale serves lookups through a Handler that keeps
// answers ready, over Pebble, while writers change every source of the
// answers (index entries, metadata, contexts, provider addresses) and a
// bulk writer puts other keys, and checks that no answer is ever one a
// finished write replaced: a reader that saw n0 writes of a key finished
// before its lookup, and n1 after, must see one of the states n0..n1+1,
// and never one older than a state it has already seen. Readers repeat
// keys, so that most answers come from the cache.
func TestAnswersNeverStale(t *testing.T) {
	ctx := context.Background()
	s, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := find.NewStoreBackend(s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := find.NewHandler(b)
	if err != nil {
		t.Fatal(err)
	}
	const (
		keys    = 6
		cycles  = 12
		readers = 4
	)
	writes := cycles * len(answerCycle)
	states := make([][]answerState, keys)
	for k := range keys {
		states[k] = answerStates(k, writes)
		if err := s.PutProvider(ctx, answerProviderInfo(k, answerAddr(k, 0, 0))); err != nil {
			t.Fatal(err)
		}
	}
	var done, looked [keys]atomic.Int64
	stop := make(chan struct{})
	var wg, noise sync.WaitGroup
	noise.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := store.Value{ProviderID: findPeer(t, 999), ContextID: fmt.Appendf(nil, "noise-%d", i), Metadata: []byte("n")}
			mhs := make([]multihash.Multihash, 300)
			for j := range mhs {
				mhs[j] = findMH(t, 100_000+i*300+j)
			}
			if err := s.Put(ctx, v, mhs...); err != nil {
				t.Errorf("noise Put: %v", err)
				return
			}
		}
	})
	for k := range keys {
		wg.Go(func() {
			for n := 1; n <= writes; n++ {
				if err := answerCycle[(n-1)%len(answerCycle)].do(ctx, s, k, (n-1)/len(answerCycle)); err != nil {
					t.Errorf("key %d, write %d: %v", k, n, err)
					return
				}
				done[k].Store(int64(n))
				// Let readers look the state up twice (to keep its answer,
				// then to be served it) before the next write replaces it.
				for want, until := looked[k].Load()+2, time.Now().Add(time.Second); looked[k].Load() < want && time.Now().Before(until); {
					time.Sleep(50 * time.Microsecond)
				}
			}
		})
	}
	var lookups atomic.Int64
	for r := range readers {
		wg.Go(func() {
			seen := make([]int, keys)
			for i := r; ; i++ {
				k := i % keys
				n0 := int(done[k].Load())
				if n0 == writes && allWritten(done[:], writes) {
					return
				}
				got, ok := lookupState(t, h, k)
				if !ok {
					return
				}
				n1 := int(done[k].Load())
				lookups.Add(1)
				looked[k].Add(1)
				hi := min(n1+1, writes)
				// The values and the provider record are read one after
				// the other, so each must be of a state in the window,
				// not necessarily the same one.
				match, addrOK := -1, len(got.md) == 0 // a 404 shows no address
				for n := max(n0, seen[k]); n <= hi; n++ {
					if match < 0 && maps.Equal(got.md, states[k][n].md) {
						match = n
					}
					addrOK = addrOK || got.addr == states[k][n].addr
				}
				if match < 0 || !addrOK {
					t.Errorf("key %d: answer %v with %d to %d writes done (state %d seen), want one of the states from %d to %d: an answer a finished write replaced",
						k, got, n0, n1, seen[k], max(n0, seen[k]), hi)
					return
				}
				// Empty answers repeat: only another pins the state.
				if len(got.md) > 0 {
					seen[k] = match
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	noise.Wait()
	if lookups.Load() < 100 {
		t.Fatalf("%d lookups ran, want at least 100", lookups.Load())
	}
	t.Logf("%d lookups", lookups.Load())
}

func allWritten(done []atomic.Int64, n int) bool {
	for i := range done {
		if int(done[i].Load()) != n {
			return false
		}
	}
	return true
}

// lookupState asks h for key k and returns what its answer shows.
func lookupState(t *testing.T, h http.Handler, k int) (answerState, bool) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/multihash/"+findMH(t, k).B58String(), nil))
	st := answerState{md: map[string]string{}}
	switch rec.Code {
	case http.StatusNotFound:
		return st, true
	case http.StatusOK:
	default:
		t.Errorf("key %d: status %d: %s", k, rec.Code, rec.Body)
		return st, false
	}
	var resp find.FindResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Errorf("key %d: %v", k, err)
		return st, false
	}
	for _, mr := range resp.MultihashResults {
		for _, pr := range mr.ProviderResults {
			st.md[string(pr.ContextID)] = string(pr.Metadata)
			if pr.Provider != nil && len(pr.Provider.Addrs) == 1 {
				st.addr = pr.Provider.Addrs[0].String()
			}
		}
	}
	return st, true
}
