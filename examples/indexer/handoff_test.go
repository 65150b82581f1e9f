package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/scatter"
	findapi "github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
)

// lastHead returns the LastHead of the only publisher in GET
// /ingest/status, cid.Undef if none.
func lastHead(t *testing.T, adminURL string) cid.Cid {
	var st []admin.PublisherStatus
	code, b := httpDo(t, http.MethodGet, adminURL+"/ingest/status", nil)
	if code != http.StatusOK || json.Unmarshal(b, &st) != nil || len(st) != 1 {
		return cid.Undef
	}
	return st[0].LastHead
}

// Freeze → handoff → resume, with two indexer processes: node 1 ingests A..D
// and freezes (admin PUT /freeze); the chain grows to Z; node 2 takes the
// publisher over (POST /ingest/handoff/{id}) and ingests E..Z only, fetching
// no entry of A..D; node 1, frozen, walks E..Z too, applying removals and
// metadata updates without entries. A scatter gather over both find APIs
// answers every multihash of A..Z as the model says, removals included.
func TestFreezeHandoffResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	chain, err := chaingen.Generate(chaingen.Config{Seed: 11, Ads: 4, MhsPerAd: 20, ChunkSize: 8, RemoveEvery: 3, UpdateEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(t, chain)
	bin := proctest.Build(t, indexerPkg)

	dir1 := t.TempDir()
	n1 := startNode(t, bin, dir1)
	pub.announce(t, n1.url("ingest"))
	waitFor(t, "node 1 to ingest A..D", func() bool { return lastHead(t, n1.url("admin")).Equals(chain.Head()) })
	if code, b := httpDo(t, http.MethodPut, n1.url("admin")+"/freeze", nil); code != http.StatusOK {
		t.Fatalf("PUT /freeze: %d %s", code, b)
	}
	var st1 admin.Status
	getJSON(t, n1.url("admin")+"/status", &st1)
	if !st1.Frozen {
		t.Fatalf("node 1 status %+v, want frozen", st1)
	}
	modelD := chain.ModelAt(3)

	// E..Z; node 1, frozen, walks them.
	if err := chain.Extend(22); err != nil {
		t.Fatal(err)
	}
	pub.setHead(t)
	pub.resetRequests()
	pub.announce(t, n1.url("ingest"))
	waitFor(t, "node 1 to walk E..Z", func() bool { return lastHead(t, n1.url("admin")).Equals(chain.Head()) })

	// Node 2, in assigner mode, takes the publisher over.
	n2 := startNode(t, bin, t.TempDir(), "-use-assigner")
	body := `{"FrozenID":"` + st1.ID.String() + `","FrozenURL":"` + n1.url("find") + `"}`
	code, b := httpDo(t, http.MethodPost, n2.url("admin")+"/ingest/handoff/"+chain.Publisher.String(), strings.NewReader(body))
	if code != http.StatusOK {
		t.Fatalf("POST /ingest/handoff: %d %s", code, b)
	}
	waitFor(t, "node 2 to ingest E..Z", func() bool { return lastHead(t, n2.url("admin")).Equals(chain.Head()) })
	var assigned []admin.Assignment
	getJSON(t, n2.url("admin")+"/ingest/assigned", &assigned)
	if len(assigned) != 1 || assigned[0].Publisher != chain.Publisher || assigned[0].Continued != st1.ID {
		t.Fatalf("GET /ingest/assigned on node 2: %+v", assigned)
	}

	// No entry of A..D was fetched since the freeze (node 1 fetches no
	// entries while frozen, node 2 starts after D); every entry of E..Z
	// that the model keeps was.
	oldChunks, oldMhs := entryChunks(t, chain, 0, 4)
	for _, c := range oldChunks {
		if n := pub.requests(c); n != 0 {
			t.Fatalf("entry chunk %s of A..D fetched %d times after the freeze", c, n)
		}
	}
	newChunks, newMhs := entryChunks(t, chain, 4, chain.Len())
	fetched := 0
	for _, c := range newChunks {
		fetched += min(pub.requests(c), 1)
	}
	if fetched == 0 {
		t.Fatal("no entry chunk of E..Z fetched")
	}

	// The chain removes, after the freeze, a context indexed before it.
	final := chain.Model()
	removed := slices.DeleteFunc(slices.Clone(modelD.Contexts()), func(v store.Value) bool {
		return slices.ContainsFunc(final.Contexts(), v.SameContext)
	})
	if len(removed) == 0 {
		t.Fatal("no context of A..D removed by E..Z: pick another seed")
	}

	// A gather over both nodes answers every multihash as the model says.
	var backends []findapi.Backend
	for _, n := range []*proc{n1, n2} {
		be, err := findapi.NewClient(n.url("find"))
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, be)
	}
	g, err := scatter.NewGather(backends)
	if err != nil {
		t.Fatal(err)
	}
	var gone int
	for _, mh := range append(append(append([]multihash.Multihash{}, oldMhs...), newMhs...), unknown(t, 3)...) {
		var got []store.Value
		for r, err := range g.Find(ctx, mh) {
			if err != nil {
				t.Fatalf("gather %s: %v", mh, err)
			}
			got = append(got, store.Value{ProviderID: r.Provider.ID, ContextID: r.ContextID, Metadata: r.Metadata})
		}
		want := final.Values(mh)
		if !sameValues(got, want) {
			t.Fatalf("gather %s: got %v, want %v", mh, got, want)
		}
		if len(want) == 0 && len(modelD.Values(mh)) > 0 {
			gone++ // indexed on node 1 before the freeze, removed after it
		}
	}
	if gone == 0 {
		t.Fatal("no multihash of a context removed after the freeze was checked")
	}
	n2.stop()
	n1.stop()

	// Node 1 restarts with -unfreeze-on-start: it resumes from FrozenAt
	// (D) and ingests E..Z again, this time with their entries.
	pub.resetRequests()
	n1 = startNode(t, bin, dir1, "-unfreeze-on-start")
	getJSON(t, n1.url("admin")+"/status", &st1)
	if st1.Frozen {
		t.Fatalf("node 1 status after unfreeze on start: %+v", st1)
	}
	probe := slices.IndexFunc(newMhs, func(mh multihash.Multihash) bool { return len(final.Values(mh)) > 0 })
	waitFor(t, "node 1 to ingest E..Z after the unfreeze", func() bool {
		return lastHead(t, n1.url("admin")).Equals(chain.Head()) && find(t, n1.url("find"), newMhs[probe]) != nil
	})
	for _, mh := range newMhs {
		if got, want := find(t, n1.url("find"), mh), final.Values(mh); !sameValues(got, want) {
			t.Fatalf("node 1 after the unfreeze: find %s: got %v, want %v", mh, got, want)
		}
	}
	for _, c := range oldChunks {
		if n := pub.requests(c); n != 0 {
			t.Fatalf("entry chunk %s of A..D fetched again after the unfreeze", c)
		}
	}
	n1.stop()
}
