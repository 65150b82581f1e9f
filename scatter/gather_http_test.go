package scatter_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// gatherPeer returns a deterministic provider for i.
func gatherPeer(tb testing.TB, i int) peer.AddrInfo {
	tb.Helper()
	seed := sha256.Sum256(fmt.Appendf(nil, "indexkit gather test peer %d", i))
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed[:]))
	if err != nil {
		tb.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := multiaddr.NewMultiaddr(fmt.Sprintf("/ip4/10.0.%d.%d/tcp/3000/http", i/250, i%250+1))
	if err != nil {
		tb.Fatal(err)
	}
	return peer.AddrInfo{ID: id, Addrs: []multiaddr.Multiaddr{a}}
}

// gatherPool is n store-backed find handlers on loopback with overlapping
// data for mh: indexer i holds providers i and i+1 under context "c",
// provider n+1 (on every indexer) under "c", and provider n+2 under
// context "c-i". want is every distinct result, as "provider/context".
type gatherPool struct {
	servers []*httptest.Server
	client  *http.Client
	mh      multihash.Multihash
	want    []string
	peers   map[peer.ID]int
}

func newGatherPool(tb testing.TB, n int, mh multihash.Multihash) *gatherPool {
	tb.Helper()
	ctx := tb.Context()
	p := &gatherPool{client: find.NewHTTPClient(), mh: mh, peers: map[peer.ID]int{}}
	tb.Cleanup(p.client.CloseIdleConnections)
	seen := map[string]bool{}
	for i := range n {
		s := memory.New()
		tb.Cleanup(func() { s.Close() })
		put := func(prov int, c string) {
			ai := gatherPeer(tb, prov)
			p.peers[ai.ID] = prov
			if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: ai, LastAdvertisementTime: time.Date(2025, 1, 1+i, 0, 0, 0, 0, time.UTC)}); err != nil {
				tb.Fatal(err)
			}
			if err := s.Put(ctx, store.Value{ProviderID: ai.ID, ContextID: []byte(c), Metadata: []byte("m")}, mh); err != nil {
				tb.Fatal(err)
			}
			if k := fmt.Sprintf("%d/%s", prov, c); !seen[k] {
				seen[k] = true
				p.want = append(p.want, k)
			}
		}
		put(i, "c")
		put(i+1, "c")
		put(n+1, "c")
		put(n+2, fmt.Sprint("c-", i))
		srv := httptest.NewServer(findHandler(tb, findStoreBackend(tb, s)))
		tb.Cleanup(srv.Close)
		p.servers = append(p.servers, srv)
	}
	slices.Sort(p.want)
	return p
}

func (p *gatherPool) backends(tb testing.TB) []find.Backend {
	tb.Helper()
	bs := make([]find.Backend, len(p.servers))
	for i, srv := range p.servers {
		b, err := find.NewClient(srv.URL, find.WithHTTPClient(p.client))
		if err != nil {
			tb.Fatal(err)
		}
		bs[i] = b
	}
	return bs
}

// Every result of every indexer comes back through a Gather of HTTP
// backends behind a find handler, in JSON and NDJSON; when an indexer is
// down, the others' results still do, marked partial.
func TestGatherHTTPPool(t *testing.T) {
	mh, _ := multihash.Sum([]byte("gather over http"), multihash.SHA2_256, -1)
	pool := newGatherPool(t, 4, mh)
	g, err := scatter.NewGather(pool.backends(t))
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(findHandler(t, g))
	defer front.Close()

	get := func(accept string) (*http.Response, []string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", front.URL+"/multihash/"+mh.B58String(), nil)
		req.Header.Set("Accept", accept)
		resp, err := pool.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var results []find.ProviderResult
		if accept == "application/x-ndjson" {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				var r find.ProviderResult
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				results = append(results, r)
			}
		} else {
			var fr find.FindResponse
			if err := json.NewDecoder(resp.Body).Decode(&fr); err != nil {
				t.Fatal(err)
			}
			if len(fr.MultihashResults) != 1 {
				t.Fatalf("%d multihash results", len(fr.MultihashResults))
			}
			results = fr.MultihashResults[0].ProviderResults
		}
		var got []string
		for _, r := range results {
			got = append(got, fmt.Sprintf("%d/%s", pool.peers[r.Provider.ID], r.ContextID))
		}
		slices.Sort(got)
		return resp, got
	}
	for _, accept := range []string{"application/json", "application/x-ndjson"} {
		resp, got := get(accept)
		if resp.StatusCode != http.StatusOK || !slices.Equal(got, pool.want) {
			t.Errorf("%s: %s, results %q, want %q", accept, resp.Status, got, pool.want)
		}
		if h := resp.Header.Get(find.HeaderBackends); h != "" && h != "4/4" {
			t.Errorf("%s: %s %q", accept, find.HeaderBackends, h)
		}
	}

	// Indexer 0 goes down: its only own result (provider 0, and n+2
	// under c-0) is gone, every other still comes back, marked partial.
	pool.servers[0].Close()
	resp, got := get("application/json")
	want := slices.DeleteFunc(slices.Clone(pool.want), func(s string) bool { return s == "0/c" || s == "6/c-0" })
	if resp.StatusCode != http.StatusOK || !slices.Equal(got, want) {
		t.Errorf("one down: %s, results %q, want %q", resp.Status, got, want)
	}
	if h := resp.Header.Get(find.HeaderBackends); h != "3/4" {
		t.Errorf("one down: %s %q, want 3/4", find.HeaderBackends, h)
	}

	// Providers are merged: one record each, 6 providers.
	list, err := g.Providers(t.Context())
	if _, partial := err.(*find.PartialError); !partial {
		t.Errorf("Providers with one indexer down: %v", err)
	}
	if len(list) != 6 {
		t.Errorf("%d providers, want 6", len(list))
	}
}

// findHandler returns find.NewHandler(b), failing tb on error.
func findHandler(tb testing.TB, b find.Backend) *find.Handler {
	tb.Helper()
	h, err := find.NewHandler(b)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// findStoreBackend returns find.NewStoreBackend(s), failing tb on error.
func findStoreBackend(tb testing.TB, s store.Store) *find.StoreBackend {
	tb.Helper()
	b, err := find.NewStoreBackend(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
