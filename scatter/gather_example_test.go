package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// memIndexer is a tiny in-memory Backend: every multihash has the same
// results.
type memIndexer struct{ results []find.ProviderResult }

func (m memIndexer) Find(ctx context.Context, _ multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		for _, r := range m.results {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func (m memIndexer) Providers(context.Context) ([]find.ProviderInfo, error) { return nil, nil }

func (m memIndexer) Provider(_ context.Context, id peer.ID) (find.ProviderInfo, error) {
	return find.ProviderInfo{}, find.ErrNotFound
}

func ExampleNewGather() {
	result := func(provider, contextID string) find.ProviderResult {
		return find.ProviderResult{ContextID: []byte(contextID), Provider: &peer.AddrInfo{ID: peer.ID(provider)}}
	}
	// Two indexers with overlapping answers: A/ctx is on both.
	a := memIndexer{[]find.ProviderResult{result("A", "ctx")}}
	b := memIndexer{[]find.ProviderResult{result("A", "ctx"), result("B", "ctx")}}
	g, err := scatter.NewGather([]find.Backend{a, b})
	if err != nil {
		panic(err)
	}

	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	var got []string
	for r, err := range g.Find(context.Background(), mh) {
		if pe, ok := errors.AsType[*find.PartialError](err); ok {
			fmt.Printf("only %d of %d indexers answered\n", pe.Answered, pe.Total)
			break
		}
		got = append(got, string(r.Provider.ID)+"/"+string(r.ContextID))
	}
	slices.Sort(got) // results arrive in the order backends yield them
	fmt.Println(got)
	// Output: [A/ctx B/ctx]
}

// A front end: the find API over a gather of indexers' find APIs, one of
// which is down. Both the gather and the front end's answer say that not
// every indexer answered.
func Example_frontEnd() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	// An indexer's find API over its store, with one value of provider.
	indexer := func(provider string) *httptest.Server {
		s := memory.New()
		id, _ := peer.Decode(provider)
		_ = s.Put(ctx, store.Value{ProviderID: id, ContextID: []byte("ctx")}, mh)
		b, _ := find.NewStoreBackend(s)
		h, _ := find.NewHandler(b)
		return httptest.NewServer(h)
	}
	ixA := indexer("12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y")
	defer ixA.Close()
	ixB := indexer("12D3KooWKRyzVWW6ChFjQjK4miCty85Niy48tpPV95XdKu1BcvMA")
	defer ixB.Close()
	down := indexer("12D3KooWKRyzVWW6ChFjQjK4miCty85Niy48tpPV95XdKu1BcvMA")
	down.Close()

	// README: gather
	var backends []find.Backend
	for _, url := range []string{ixA.URL, ixB.URL, down.URL} {
		c, err := find.NewClient(url) // any find API: indexkit's, storetheindex's, indexstar's
		if err != nil {
			log.Fatal(err)
		}
		backends = append(backends, c)
	}
	g, err := scatter.NewGather(backends)
	if err != nil {
		log.Fatal(err)
	}
	front, err := find.NewHandler(g) // the front end: the same find API over the gather
	if err != nil {
		log.Fatal(err)
	}

	var providers []string
	for r, err := range g.Find(ctx, mh) { // each result as soon as any indexer yields it
		if pe, ok := errors.AsType[*find.PartialError](err); ok {
			fmt.Printf("only %d of %d indexers answered\n", pe.Answered, pe.Total)
			break
		}
		providers = append(providers, r.Provider.ID.String())
	}
	// README end

	slices.Sort(providers) // results arrive in the order backends yield them
	fmt.Println(providers)
	srv := httptest.NewServer(front)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/multihash/" + mh.B58String())
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "X-IPNI-Backends:", resp.Header.Get("X-IPNI-Backends"))
	// Output:
	// only 2 of 3 indexers answered
	// [12D3KooWKRyzVWW6ChFjQjK4miCty85Niy48tpPV95XdKu1BcvMA 12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y]
	// 200 OK X-IPNI-Backends: 2/3
}

// A ring over query nodes whose data is placed by the same ring: each key
// is held by its 2 owners, and a lookup takes the first complete answer of
// one of them — here while the key's primary is down.
func ExampleWithRing() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	provider, _ := peer.Decode("12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y")
	names := []string{"q0", "q1", "q2", "q3"}
	ring, err := scatter.NewRing(names, scatter.DefaultVnodes, 2)
	if err != nil {
		log.Fatal(err)
	}
	owners := ring.Owners(mh)

	// Four query nodes; the key is placed on its owners only (package
	// scatter/keyspace does this for a real query layer).
	backends := make([]find.Backend, len(names))
	for i := range names {
		s := memory.New()
		defer s.Close()
		if slices.Contains(owners, i) {
			_ = s.Put(ctx, store.Value{ProviderID: provider, ContextID: []byte("ctx")}, mh)
		}
		h, _ := find.NewHandler(must(find.NewStoreBackend(s)))
		srv := httptest.NewServer(h)
		defer srv.Close()
		if i == owners[0] {
			srv.Close() // the primary owner is down
		}
		backends[i] = must(find.NewClient(srv.URL))
	}
	g, err := scatter.NewGather(backends, scatter.WithRing(ring))
	if err != nil {
		log.Fatal(err)
	}
	for r, err := range g.Find(ctx, mh) {
		if err != nil {
			fmt.Println("no complete answer:", err)
			break
		}
		fmt.Println(r.Provider.ID, string(r.ContextID))
	}
	asked := 0
	for _, b := range g.Stats().Backends {
		asked += int(b.Requests)
	}
	fmt.Println("backends asked:", asked, "of", len(backends))
	// Output:
	// 12D3KooWPbZ3nrCvgt2FRRf2Gg6QRmzzFzGEbTaVb4trKYT3ZL8Y ctx
	// backends asked: 2 of 4
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}
