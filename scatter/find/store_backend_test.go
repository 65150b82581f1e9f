package find_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

var updateFindGolden = flag.Bool("update-find-golden", false, "rewrite the find API golden files in testdata/")

// findResultKey renders a result for order-free comparison.
func findResultKey(r find.ProviderResult) string {
	id := peer.ID("")
	var addrs string
	if r.Provider != nil {
		id = r.Provider.ID
		addrs = fmt.Sprint(r.Provider.Addrs)
	}
	return fmt.Sprintf("%s %s ctx=%q md=%q", id, addrs, r.ContextID, r.Metadata)
}

func findCollect(t *testing.T, b find.Backend, mh multihash.Multihash) []string {
	t.Helper()
	var out []string
	for r, err := range b.Find(context.Background(), mh) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, findResultKey(r))
	}
	slices.Sort(out)
	return out
}

// findExtendedFixture is a store with one multihash whose values exercise
// every extended-provider rule, and the results the reference would give.
type findExtendedFixture struct {
	s    *memory.Store
	mh   multihash.Multihash
	want []find.ProviderResult
}

func newFindExtendedFixture(t *testing.T) findExtendedFixture {
	t.Helper()
	ctx := context.Background()
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	p1, p3 := findAddrInfo(t, 1), findAddrInfo(t, 3)
	e1, e2, e3, e4 := findAddrInfo(t, 11), findAddrInfo(t, 12), findAddrInfo(t, 13), findAddrInfo(t, 14)
	p1again := peer.AddrInfo{ID: p1.ID, Addrs: findAddrs(t, "/ip4/9.9.9.9/tcp/1/http")}
	err := s.PutProvider(ctx, store.ProviderInfo{
		AddrInfo: *p1,
		ExtendedProviders: &store.ExtendedProviders{
			// e1 with its own metadata, e2 without, p1 itself without
			// metadata (skipped), with the value's metadata (skipped) and
			// with other metadata (a second result).
			Providers: []peer.AddrInfo{*e1, *e2, *p1, p1again, p1again},
			Metadatas: [][]byte{[]byte("md-e1"), nil, nil, []byte("md-c1"), []byte("md-other")},
			Contextual: []store.ContextualExtendedProviders{
				{Override: true, ContextID: []byte("c2"), Providers: []peer.AddrInfo{*e3}, Metadatas: [][]byte{[]byte("md-e3")}},
				{Override: false, ContextID: []byte("c3"), Providers: []peer.AddrInfo{*e4}},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: *p3}); err != nil {
		t.Fatal(err)
	}
	mh := findMH(t, 1)
	for _, v := range []store.Value{
		{ProviderID: p1.ID, ContextID: []byte("c1"), Metadata: []byte("md-c1")},
		{ProviderID: p1.ID, ContextID: []byte("c2"), Metadata: []byte("md-c2")},
		{ProviderID: p1.ID, ContextID: []byte("c3"), Metadata: []byte("md-c3")},
		{ProviderID: p3.ID, ContextID: []byte("c9"), Metadata: []byte("md-p3")},
	} {
		if err := s.Put(ctx, v, mh); err != nil {
			t.Fatal(err)
		}
	}
	res := func(ai *peer.AddrInfo, ctxID, md string) find.ProviderResult {
		return find.ProviderResult{ContextID: []byte(ctxID), Metadata: []byte(md), Provider: ai}
	}
	want := []find.ProviderResult{
		// c1: main, then chain-level: e1 (own md), e2 (value's md), p1 with other md.
		res(p1, "c1", "md-c1"), res(e1, "c1", "md-e1"), res(e2, "c1", "md-c1"), res(&p1again, "c1", "md-other"),
		// c2: main, then the overriding contextual e3 only.
		res(p1, "c2", "md-c2"), res(e3, "c2", "md-e3"),
		// c3: main, contextual e4 (value's md), then chain-level (no
		// override); here p1's "md-c1" entry differs from the value's
		// metadata, so it is a result too.
		res(p1, "c3", "md-c3"), res(e4, "c3", "md-c3"), res(e1, "c3", "md-e1"), res(e2, "c3", "md-c3"),
		res(&p1again, "c3", "md-c1"), res(&p1again, "c3", "md-other"),
		res(p3, "c9", "md-p3"),
	}
	return findExtendedFixture{s: s, mh: mh, want: want}
}

func TestStoreBackendExtendedProviders(t *testing.T) {
	fx := newFindExtendedFixture(t)
	var want []string
	for _, r := range fx.want {
		want = append(want, findResultKey(r))
	}
	slices.Sort(want)
	for _, ttl := range []time.Duration{0, time.Hour} {
		b := newStoreBackend(t, fx.s, find.WithProviderTTL(ttl))
		for range 2 { // the second round is served from the cache
			if got := findCollect(t, b, fx.mh); !slices.Equal(got, want) {
				t.Fatalf("ttl %v: results\n%s\nwant\n%s", ttl, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	// Per value, the main provider comes first, then its extended ones.
	b := newStoreBackend(t, fx.s)
	var firstOfCtx = map[string]peer.ID{}
	for r, err := range b.Find(context.Background(), fx.mh) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := firstOfCtx[string(r.ContextID)]; !ok {
			firstOfCtx[string(r.ContextID)] = r.Provider.ID
		}
	}
	if firstOfCtx["c1"] != findPeer(t, 1) || firstOfCtx["c9"] != findPeer(t, 3) {
		t.Errorf("first result per context %v, want the main provider", firstOfCtx)
	}
	if got := findCollect(t, b, findMH(t, 99)); len(got) != 0 {
		t.Errorf("unknown multihash: %v, want nothing", got)
	}
}

func TestStoreBackendProviderTTL(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	p := findAddrInfo(t, 1)
	mh := findMH(t, 1)
	if err := s.Put(ctx, store.Value{ProviderID: p.ID, ContextID: []byte("c"), Metadata: []byte("m")}, mh); err != nil {
		t.Fatal(err)
	}
	uncached := newStoreBackend(t, s, find.WithProviderTTL(0))
	cached := newStoreBackend(t, s, find.WithProviderTTL(time.Hour))
	// Without a record, the result carries the provider ID alone.
	bare := []string{findResultKey(find.ProviderResult{ContextID: []byte("c"), Metadata: []byte("m"), Provider: &peer.AddrInfo{ID: p.ID}})}
	withAddrs := []string{findResultKey(find.ProviderResult{ContextID: []byte("c"), Metadata: []byte("m"), Provider: p})}
	if got := findCollect(t, cached, mh); !slices.Equal(got, bare) {
		t.Fatalf("provider without record: %v, want %v", got, bare)
	}
	if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: *p}); err != nil {
		t.Fatal(err)
	}
	if got := findCollect(t, uncached, mh); !slices.Equal(got, withAddrs) {
		t.Errorf("TTL 0 after the record appeared: %v, want %v", got, withAddrs)
	}
	if got := findCollect(t, cached, mh); !slices.Equal(got, bare) {
		t.Errorf("TTL 1h: %v, want the cached absence %v", got, bare)
	}
}

// TestStoreBackendValueWithoutProviderRecord: values written with no
// provider record (store.PutProvider never called) are found, each result
// carrying its provider's ID and no addresses, over the store backend and
// over the wire, in JSON and NDJSON. The reference drops such values, and
// so did this package once: the lookup then answered 404.
func TestStoreBackendValueWithoutProviderRecord(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	mh := findMH(t, 7)
	p1, p2 := findPeer(t, 1), findPeer(t, 2)
	for _, v := range []store.Value{
		{ProviderID: p1, ContextID: []byte("c1"), Metadata: []byte("m1")},
		{ProviderID: p2, ContextID: []byte("c2"), Metadata: []byte("m2")},
	} {
		if err := s.Put(ctx, v, mh); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		findResultKey(find.ProviderResult{ContextID: []byte("c1"), Metadata: []byte("m1"), Provider: &peer.AddrInfo{ID: p1}}),
		findResultKey(find.ProviderResult{ContextID: []byte("c2"), Metadata: []byte("m2"), Provider: &peer.AddrInfo{ID: p2}}),
	}
	slices.Sort(want)
	b := newStoreBackend(t, s)
	if got := findCollect(t, b, mh); !slices.Equal(got, want) {
		t.Fatalf("store backend: %v, want %v", got, want)
	}

	srv := httptest.NewServer(newHandler(t, b))
	defer srv.Close()
	for _, accept := range []string{"application/json", "application/x-ndjson"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/multihash/"+mh.B58String(), nil)
		req.Header.Set("Accept", accept)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %q, want 200", accept, resp.Status, body)
		}
		for _, id := range []peer.ID{p1, p2} {
			if want := `"Provider":{"ID":"` + id.String() + `","Addrs":[]}`; !strings.Contains(string(body), want) {
				t.Errorf("%s: answer %s, want it to hold %s", accept, body, want)
			}
		}
	}
	c, err := find.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := findCollect(t, c, mh); !slices.Equal(got, want) {
		t.Errorf("over HTTP: %v, want %v", got, want)
	}
}

func TestStoreBackendProviders(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	b := newStoreBackend(t, s)
	infos, err := b.Providers(ctx)
	if err != nil || infos == nil || len(infos) != 0 {
		t.Fatalf("empty store: %v, %v; want [] and nil", infos, err)
	}
	full := findFullProvider(t)
	if err := s.PutProvider(ctx, full); err != nil {
		t.Fatal(err)
	}
	got, err := b.Provider(ctx, full.AddrInfo.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := find.ProviderInfoFromStore(&full)
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) {
		t.Errorf("Provider:\n%s\nwant\n%s", gj, wj)
	}
	if _, err := b.Provider(ctx, findPeer(t, 42)); !errors.Is(err, find.ErrNotFound) {
		t.Errorf("unknown provider: %v, want ErrNotFound", err)
	}
	infos, err = b.Providers(ctx)
	if err != nil || len(infos) != 1 {
		t.Fatalf("Providers: %v, %v", infos, err)
	}
}

// findFullProvider is a provider record with every field set.
func findFullProvider(t *testing.T) store.ProviderInfo {
	adCid := cid.NewCidV1(cid.DagJSON, findMH(t, 100))
	frozenCid := cid.NewCidV1(cid.DagJSON, findMH(t, 101))
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("CEST", 2*3600))
	return store.ProviderInfo{
		AddrInfo:              *findAddrInfo(t, 1),
		Publisher:             *findAddrInfo(t, 2),
		LastAdvertisement:     adCid,
		LastAdvertisementTime: at,
		FrozenAt:              frozenCid,
		FrozenAtTime:          at.Add(time.Hour),
		LastError:             "fetching entries: timeout",
		LastErrorTime:         at.Add(2 * time.Hour),
		ExtendedProviders: &store.ExtendedProviders{
			Providers: []peer.AddrInfo{*findAddrInfo(t, 11), *findAddrInfo(t, 12)},
			Metadatas: [][]byte{[]byte("md-11")},
			Contextual: []store.ContextualExtendedProviders{{
				Override: true, ContextID: []byte("ctx-a"),
				Providers: []peer.AddrInfo{*findAddrInfo(t, 13)}, Metadatas: [][]byte{[]byte("md-13")},
			}},
		},
	}
}

// findGolden compares got with testdata/name, or rewrites it with
// -update-find-golden.
func findGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateFindGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-find-golden to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got %s\nwant %s", name, got, want)
	}
}

// TestFindGolden pins the JSON shapes: a FindResponse with extended
// providers, a full ProviderInfo, and a minimal one whose undefined CIDs
// are null and whose empty fields are left out, as the reference emits them.
func TestFindGolden(t *testing.T) {
	fx := newFindExtendedFixture(t)
	h := newHandler(t, newStoreBackend(t, fx.s))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/multihash/"+fx.mh.B58String(), nil))
	// The store's order of values is its own; sort the results so the
	// golden file does not depend on it.
	var fr find.FindResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &fr); err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(fr.MultihashResults[0].ProviderResults, func(a, b find.ProviderResult) int {
		return strings.Compare(findResultKey(a), findResultKey(b))
	})
	got, _ := json.Marshal(fr)
	findGolden(t, "find_response.json", append(got, '\n'))

	full := findFullProvider(t)
	got, _ = json.Marshal(find.ProviderInfoFromStore(&full))
	findGolden(t, "provider_info_full.json", append(got, '\n'))

	minimal := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: findPeer(t, 1)}}
	got, _ = json.Marshal(find.ProviderInfoFromStore(&minimal))
	findGolden(t, "provider_info_min.json", append(got, '\n'))
	const wantMin = `{"AddrInfo":{"ID":"%s","Addrs":[]},"LastAdvertisement":null,"FrozenAt":null}`
	if string(got) != fmt.Sprintf(wantMin, findPeer(t, 1)) {
		t.Errorf("minimal ProviderInfo %s, want null CIDs and nothing else", got)
	}
}

// TestStoreBackendProviderRefreshAhead checks the provider cache's
// renewal: a record read at 0 with a TTL of 8 s is used as read until 7 s;
// from 7 s (the last eighth of its life) one lookup reads it again, so a
// changed address shows from then on; it never shows later than 8 s.
func TestStoreBackendProviderRefreshAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := memory.New()
		defer s.Close()
		p := findAddrInfo(t, 1)
		mh := findMH(t, 1)
		if err := s.Put(ctx, store.Value{ProviderID: p.ID, ContextID: []byte("c"), Metadata: []byte("m")}, mh); err != nil {
			t.Fatal(err)
		}
		if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: *p}); err != nil {
			t.Fatal(err)
		}
		b := newStoreBackend(t, s, find.WithProviderTTL(8*time.Second))
		moved := &peer.AddrInfo{ID: p.ID, Addrs: findAddrs(t, "/ip4/10.9.9.9/tcp/4000/http")}
		old := []string{findResultKey(find.ProviderResult{ContextID: []byte("c"), Metadata: []byte("m"), Provider: p})}
		updated := []string{findResultKey(find.ProviderResult{ContextID: []byte("c"), Metadata: []byte("m"), Provider: moved})}
		if got := findCollect(t, b, mh); !slices.Equal(got, old) {
			t.Fatalf("at 0 s: %v, want %v", got, old)
		}
		if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: *moved}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second)
		if got := findCollect(t, b, mh); !slices.Equal(got, old) {
			t.Fatalf("at 6 s, record read at 0 s with TTL 8 s: %v, want the cached %v", got, old)
		}
		time.Sleep(1500 * time.Millisecond)
		if got := findCollect(t, b, mh); !slices.Equal(got, updated) {
			t.Fatalf("at 7.5 s, in the record's last eighth: %v, want it read again: %v", got, updated)
		}
		if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: *p}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(8 * time.Second) // past the renewed record's expiry
		if got := findCollect(t, b, mh); !slices.Equal(got, old) {
			t.Fatalf("8 s after the renewal: %v, want the record read again: %v", got, old)
		}
	})
}
