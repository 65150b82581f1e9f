package interop

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	findclient "github.com/ipni/go-libipni/find/client"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// TestPoolFromAnotherModule starts a whole pool from outside indexkit's
// module, through public packages only (examples/localpool): generated
// publishers with their ground truth, an assigner, two indexers, a front
// end and a piece sampler, in goroutines. Once the publishers have
// published their last ad, the reference client (go-libipni's find
// client) finds every multihash of the truth through the front end with
// exactly its true (provider, context, metadata) values, and finds nothing
// for the multihashes whose every context was removed. The oracle is
// the publishers' truth and the reference client: no indexkit code
// checks the answers.
func TestPoolFromAnotherModule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ads = 8
	p, truth := settledPool(ctx, t, ads)
	if len(truth.Publishers) != 2 || len(truth.Entries) < 10 {
		t.Fatalf("truth of %d publishers, %d multihashes; want 2 publishers and at least 10 multihashes", len(truth.Publishers), len(truth.Entries))
	}

	if len(truth.Removed) == 0 {
		t.Fatal("the truth has no removed multihash: the test would check no removal")
	}

	fc, err := findclient.New(p.URLs().Find)
	if err != nil {
		t.Fatal(err)
	}
	type value struct{ provider, context, metadata string }
	left := truth.Entries
	// A removed multihash is a truth entry with no value: the reference
	// client must find nothing for it.
	for _, mh := range truth.Removed {
		left = append(left, publishernode.Entry{Multihash: mh})
	}
	for len(left) > 0 {
		var still []string
		next := left[:0:0]
		for _, e := range left {
			mh, err := multihash.FromB58String(e.Multihash)
			if err != nil {
				t.Fatalf("truth multihash %q: %v", e.Multihash, err)
			}
			var want, got []value
			for _, v := range e.Values {
				want = append(want, value{v.ProviderID, string(v.ContextID), string(v.Metadata)})
			}
			// A 404 is an empty answer with no error (go-libipni's
			// client); any other failure is retried.
			resp, err := fc.Find(ctx, mh)
			if err != nil {
				still = append(still, e.Multihash)
				next = append(next, e)
				continue
			}
			if len(resp.MultihashResults) == 1 && bytes.Equal(resp.MultihashResults[0].Multihash, mh) {
				for _, r := range resp.MultihashResults[0].ProviderResults {
					got = append(got, value{r.Provider.ID.String(), string(r.ContextID), string(r.Metadata)})
				}
			}
			cmp := func(a, b value) int {
				return bytes.Compare([]byte(a.provider+"\x00"+a.context+"\x00"+a.metadata), []byte(b.provider+"\x00"+b.context+"\x00"+b.metadata))
			}
			slices.SortFunc(want, cmp)
			slices.SortFunc(got, cmp)
			if !slices.Equal(want, got) {
				still = append(still, e.Multihash)
				next = append(next, e)
			}
		}
		if len(next) > 0 {
			select {
			case <-ctx.Done():
				t.Fatalf("%d of %d multihashes not answered with exactly their true values, e.g. %s", len(still), len(truth.Entries), still[0])
			case <-time.After(300 * time.Millisecond):
			}
		}
		left = next
	}
	t.Logf("%d multihashes of %d publishers found in full, %d removed ones not found, through the front end", len(truth.Entries), len(truth.Publishers), len(truth.Removed))
}
