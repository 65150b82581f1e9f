package sample_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// specAnswer is the spec's sample computed the obvious way: the context's
// multihashes sorted by their bytes, indices drawn by Pick below their
// count, each as a CIDv1 raw.
func specAnswer(mhs []multihash.Multihash, beacon []byte, max int) []string {
	sorted := slices.Clone(mhs)
	slices.SortFunc(sorted, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	sorted = slices.CompactFunc(sorted, func(a, b multihash.Multihash) bool { return bytes.Equal(a, b) })
	var out []string
	for _, i := range sample.Pick(beacon, len(sorted), max) {
		out = append(out, cid.NewCidV1(cid.Raw, sorted[i]).String())
	}
	return out
}

var beacons = []string{
	"3439d92d58e47d342131d446a3abe264396dd264717897af30525c98408c834f",
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdee",
	"ff",
	"00000000000000000000000000000001",
}

// Indexers that ingested the same context in different orders and
// batchings (one Put larger than a disk backend's batch, small reversed
// Puts, small shuffled Puts with repeats, extra multihashes put and
// removed again), each in another backend, answer every beacon alike over
// HTTP, and the answer is the spec's: indices drawn below the context's
// whole count, into its multihashes sorted by their bytes.
func TestAgreement(t *testing.T) {
	ctx := context.Background()
	prov := storetest.PeerID("agreed")
	ctxID := []byte("deal-42")
	mhs := storetest.Multihashes("agree", 5000)
	extra := storetest.Multihashes("agree-removed", 300)
	stores := backends(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range stores {
			if !yield(n) {
				return
			}
		}
	})
	var urls []string
	for i, name := range names {
		st := stores[name]
		v := store.Value{ProviderID: prov, ContextID: ctxID, Metadata: []byte("m")}
		order := slices.Clone(mhs)
		batch := []int{5000, 100, 7, 1000}[i%4]
		switch i % 4 {
		case 1:
			slices.Reverse(order)
		case 2, 3:
			r := rand.New(rand.NewPCG(uint64(i), 9))
			r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		if i%2 == 1 {
			if err := st.Put(ctx, v, extra...); err != nil {
				t.Fatal(err)
			}
		}
		for j := 0; j < len(order); j += batch {
			b := order[j:min(j+batch, len(order))]
			if i == 2 {
				b = append(slices.Clone(b), order[j/2])
			}
			if err := st.Put(ctx, v, b...); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 1 {
			if err := st.Remove(ctx, prov, ctxID, extra...); err != nil {
				t.Fatal(err)
			}
		}
		h, err := sample.NewHandler(st)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, server(t, h).URL+sample.Prefix+prov.String()+"/"+base64.URLEncoding.EncodeToString(ctxID))
	}
	for _, b := range beacons {
		want := specAnswer(mhs, mustHex(t, b), 10)
		for i, u := range urls {
			a := get(t, u, "?max=10&beacon="+b)
			if a.code != http.StatusOK || !slices.Equal(a.cids, want) {
				t.Fatalf("beacon %s: %s answers %d %v\nwant the spec's sample %v", b, names[i], a.code, a.cids, want)
			}
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	var b []byte
	if _, err := fmt.Sscanf(s, "%x", &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// indexer serves the sampling API over st and returns its base URL.
func indexer(t *testing.T, st store.Store) string {
	t.Helper()
	h, err := sample.NewHandler(st)
	if err != nil {
		t.Fatal(err)
	}
	return server(t, h).URL
}

func put(t *testing.T, st store.Store, v store.Value, mhs []multihash.Multihash) {
	t.Helper()
	if err := st.Put(context.Background(), v, mhs...); err != nil {
		t.Fatal(err)
	}
}

// front serves a front end's sampling API: First over a Client per URL.
func front(t *testing.T, timeout time.Duration, urls ...string) string {
	t.Helper()
	var srcs []sample.Source
	for _, u := range urls {
		c, err := sample.NewClient(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, c)
	}
	h, err := sample.NewSourceHandler(sample.First(timeout, srcs...))
	if err != nil {
		t.Fatal(err)
	}
	return server(t, h).URL
}

// A front end answers from whichever of its two real indexers (a memory
// and a pebble store, behind the sampling API over HTTP) holds the
// context, as the indexer itself does; a context both hold, ingested in
// different orders, gets the one answer. Unknown everywhere is 404; a
// backend down or silent turns an unknown into 502 or 504, never 404.
func TestFirst(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	peb, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peb.Close() })
	prov := storetest.PeerID("front")
	both, onlyA, onlyB := []byte("both"), []byte("only-a"), []byte("only-b")
	shared := storetest.Multihashes("front-shared", 2000)
	put(t, mem, store.Value{ProviderID: prov, ContextID: both}, shared)
	reversed := slices.Clone(shared)
	slices.Reverse(reversed)
	for i := 0; i < len(reversed); i += 300 {
		put(t, peb, store.Value{ProviderID: prov, ContextID: both}, reversed[i:min(i+300, len(reversed))])
	}
	aMHs, bMHs := storetest.Multihashes("front-a", 50), storetest.Multihashes("front-b", 70)
	put(t, mem, store.Value{ProviderID: prov, ContextID: onlyA}, aMHs)
	put(t, peb, store.Value{ProviderID: prov, ContextID: onlyB}, bMHs)
	a, b := indexer(t, mem), indexer(t, peb)
	fe := front(t, 5*time.Second, a, b)
	path := func(c []byte) string {
		return sample.Prefix + prov.String() + "/" + base64.StdEncoding.EncodeToString(c) + "?max=10&beacon=" + beacons[0]
	}
	for _, tc := range []struct {
		ctxID []byte
		mhs   []multihash.Multihash
	}{{both, shared}, {onlyA, aMHs}, {onlyB, bMHs}} {
		want := specAnswer(tc.mhs, mustHex(t, beacons[0]), 10)
		got := get(t, fe, path(tc.ctxID))
		if got.code != http.StatusOK || !slices.Equal(got.cids, want) || got.beacon != beacons[0] {
			t.Fatalf("front end, context %s: %d %v (beacon %s), want %v", tc.ctxID, got.code, got.cids, got.beacon, want)
		}
		for _, u := range []string{a, b} {
			if direct := get(t, u, path(tc.ctxID)); direct.code == http.StatusOK && !slices.Equal(direct.cids, want) {
				t.Fatalf("indexer %s, context %s: %v, want %v", u, tc.ctxID, direct.cids, want)
			}
		}
	}
	// Without a beacon the front end draws one, sends it to the
	// indexers, and its answer is reproducible from the header.
	random := get(t, fe, sample.Prefix+prov.String()+"/"+base64.StdEncoding.EncodeToString(both)+"?max=4")
	if again := get(t, b, sample.Prefix+prov.String()+"/"+base64.StdEncoding.EncodeToString(both)+"?max=4&beacon="+random.beacon); random.code != http.StatusOK || !slices.Equal(again.cids, random.cids) {
		t.Fatalf("front end without a beacon: %d %v (beacon %q); an indexer given that beacon: %v", random.code, random.cids, random.beacon, again.cids)
	}

	unknown := path([]byte("nowhere"))
	if got := get(t, fe, unknown); got.code != http.StatusNotFound || !strings.Contains(errorBody(t, got), "no such provider and context ID") {
		t.Fatalf("a context no indexer holds: %d %q, want 404", got.code, got.body)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	withDown := front(t, 5*time.Second, a, down.URL)
	if got := get(t, withDown, path(onlyA)); got.code != http.StatusOK {
		t.Fatalf("a backend down, the other holding the context: %d %q, want 200", got.code, got.body)
	}
	if got := get(t, withDown, unknown); got.code != http.StatusBadGateway || !strings.Contains(errorBody(t, got), "1 of 2 indexers failed") {
		t.Fatalf("a backend down, the other without the context: %d %q, want 502", got.code, got.body)
	}
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(silent.Close)
	withSilent := front(t, 200*time.Millisecond, a, silent.URL)
	if got := get(t, withSilent, unknown); got.code != http.StatusGatewayTimeout || !strings.Contains(errorBody(t, got), "(1 timed out)") {
		t.Fatalf("a backend silent, the other without the context: %d %q, want 504", got.code, got.body)
	}
	patient := front(t, time.Minute, a, silent.URL)
	start := time.Now()
	if got := get(t, patient, path(onlyA)); got.code != http.StatusOK || time.Since(start) > 10*time.Second {
		t.Fatalf("a backend silent, the other holding the context: %d %q after %v, want 200 without waiting for the silent one", got.code, got.body, time.Since(start))
	}
}
