package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
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
