package health_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/libp2p/go-libp2p/core/peer"
)

func serve(t *testing.T, h http.Handler) string {
	mux := http.NewServeMux()
	mux.Handle("/health", h)
	mux.Handle("/stats", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET %s: %d %v %q", u, resp.StatusCode, resp.Header, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %q: %v", u, body, err)
	}
}

func fill(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i, name := range []string{"a", "b", "c"} {
		v := store.Value{ProviderID: storetest.PeerID(name), ContextID: []byte("ctx"), Metadata: []byte("m")}
		if err := s.Put(ctx, v, storetest.Multihashes(name, 100*(i+1))...); err != nil {
			t.Fatal(err)
		}
		if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: v.ProviderID}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIndexer(t *testing.T) {
	p, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for name, s := range map[string]store.Store{"memory": memory.New(), "pebble": p} {
		t.Run(name, func(t *testing.T) {
			fill(t, s)
			var frozen atomic.Bool
			id := storetest.PeerID("node")
			u := serve(t, health.NewHandler(health.Config{ID: id, Frozen: frozen.Load, Store: s}))
			var h health.Health
			getJSON(t, u+"/health", &h)
			if h.Status != "ok" || h.State != health.Active || h.ID != id.String() || h.Backends != nil {
				t.Fatalf("/health: %+v", h)
			}
			frozen.Store(true)
			getJSON(t, u+"/health", &h)
			if h.State != health.Frozen {
				t.Fatalf("/health of a frozen node: %+v", h)
			}
			var st health.Stats
			getJSON(t, u+"/stats", &st)
			size, _ := s.Size(context.Background())
			if st.Providers != 3 || st.EntriesEstimate != size/health.BytesPerEntry || st.Backends != nil {
				t.Fatalf("/stats: %+v (size %d)", st, size)
			}
			if _, counts := s.(health.EntryCounter); counts && (st.EntriesCount != 600 || !st.EntriesExact) {
				t.Fatalf("/stats of a store that counts: EntriesCount %d, exact %v, want 600, exact", st.EntriesCount, st.EntriesExact)
			} else if !counts && (st.EntriesCount != st.EntriesEstimate || st.EntriesExact) {
				t.Fatalf("/stats of a store that does not count: %+v, want EntriesCount = EntriesEstimate", st)
			}
		})
	}
}

// Count is exact on every backend a node may run, with the options a node
// opens Pebble with too (digest-prefix keys, sorted runs, no populations,
// sized to a budget): 0 for an empty store (Pebble's estimate said 75),
// each multihash once, what is put shows at once, before any flush (the
// estimate stood still until a memtable reached the disk), and a removed
// context's multihashes stop counting before any sweep.
func TestCountExact(t *testing.T) {
	ctx := context.Background()
	open := func(opts ...pebble.Option) store.Store {
		p, err := pebble.Open(t.TempDir(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	for name, s := range map[string]store.Store{
		"memory": memory.New(),
		"pebble": open(pebble.WithCacheSize(8 << 20)),
		"pebble-node": open(pebble.WithCacheSize(8<<20), pebble.WithDigestPrefixKeys(), pebble.WithSortedRuns(1<<20),
			pebble.WithoutPopulations(), pebble.WithDiskBudget(64<<30)),
	} {
		t.Run(name, func(t *testing.T) {
			count := func(want int64) {
				t.Helper()
				st, err := health.Count(ctx, s)
				if err != nil || st.EntriesCount != want || !st.EntriesExact {
					t.Fatalf("Count = %+v, %v; want EntriesCount %d, exact", st, err, want)
				}
			}
			count(0)
			v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("c")}
			mhs := storetest.Multihashes("exact", 5000)
			for i := 0; i < len(mhs); i += 500 {
				if err := s.Put(ctx, v, mhs[i:i+500]...); err != nil {
					t.Fatal(err)
				}
				count(int64(i + 500))
			}
			w := store.Value{ProviderID: storetest.PeerID("q"), ContextID: []byte("c")}
			if err := s.Put(ctx, w, mhs[:100]...); err != nil {
				t.Fatal(err)
			}
			count(5000)
			// Removed lazily (the index entries stay until a sweep):
			// the multihashes left with no value do not count.
			if err := s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID); err != nil {
				t.Fatal(err)
			}
			count(100)
		})
	}
}

func TestMethods(t *testing.T) {
	u := serve(t, health.NewHandler(health.Config{Store: memory.New()}))
	for _, path := range []string{"/health", "/stats"} {
		req, _ := http.NewRequest(http.MethodOptions, u+path, nil)
		req.Header.Set("Origin", "https://example.org")
		req.Header.Set("Access-Control-Request-Method", "GET")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "GET") {
			t.Fatalf("OPTIONS %s: %d %v", path, resp.StatusCode, resp.Header)
		}
		resp, err = http.Post(u+path, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("POST %s: %d, want 405", path, resp.StatusCode)
		}
	}
}

// A front end sums its backends' /stats in one round, leaving out the one
// that does not answer, and reuses the sum for a second.
func TestSum(t *testing.T) {
	var urls []string
	var calls atomic.Int32
	for range 2 {
		s := memory.New()
		defer s.Close()
		fill(t, s)
		inner := serve(t, health.NewHandler(health.Config{Store: s}))
		counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			resp, err := http.Get(inner + r.URL.Path)
			if err != nil {
				http.Error(w, err.Error(), 502)
				return
			}
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			io.Copy(w, resp.Body)
		}))
		defer counted.Close()
		urls = append(urls, counted.URL)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	urls = append(urls, dead.URL)
	front := serve(t, health.NewHandler(health.Config{
		Stats: func(ctx context.Context) (health.Stats, error) {
			return health.Sum(ctx, http.DefaultClient, urls, time.Second), nil
		},
		Backends: func() int { return len(urls) },
	}))
	var st health.Stats
	getJSON(t, front+"/stats", &st)
	if st.Providers != 6 || st.EntriesCount != 1200 || !st.EntriesExact || *st.Backends != 3 || *st.BackendsAnswered != 2 {
		t.Fatalf("front end /stats: %+v", st)
	}
	getJSON(t, front+"/stats", &st)
	if n := calls.Load(); n != 2 {
		t.Fatalf("two /stats within a second made %d backend requests, want 2 (one round)", n)
	}
	var h health.Health
	getJSON(t, front+"/health", &h)
	if h.State != health.Active || h.Backends == nil || *h.Backends != 3 || h.ID != "" {
		t.Fatalf("front end /health: %+v", h)
	}
}
