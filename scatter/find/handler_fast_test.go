package find_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// findIterOnly hides a StoreBackend's type, so that the handler reads it
// through the Find iterator, as it reads any other Backend.
type findIterOnly struct{ find.Backend }

// TestHandlerStoreBackendPath checks that the handler's direct path over a
// StoreBackend answers byte for byte what the iterator path answers and
// what encoding/json writes for the results in Find's order, with a
// Content-Length equal to the body's, for answers from one result to
// thousands (beyond the cached Content-Length values).
func TestHandlerStoreBackendPath(t *testing.T) {
	fx := newFindExtendedFixture(t)
	sb := newStoreBackend(t, fx.s)
	direct, viaIter := newHandler(t, sb), newHandler(t, findIterOnly{sb})
	check := func(t *testing.T, path string, want []byte) {
		t.Helper()
		for name, h := range map[string]*find.Handler{"direct": direct, "iterator": viaIter} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			if rec.Code != 200 {
				t.Fatalf("%s: %s: status %d", name, path, rec.Code)
			}
			if got := rec.Body.String(); got != string(want) {
				t.Fatalf("%s: %s:\n got %s\nwant %s", name, path, got, want)
			}
			if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(want)) {
				t.Fatalf("%s: %s: Content-Length %q for %d bytes", name, path, cl, len(want))
			}
		}
	}
	want, _ := json.Marshal(find.FindResponse{MultihashResults: []find.MultihashResult{{Multihash: fx.mh, ProviderResults: fx.want}}})
	check(t, "/multihash/"+fx.mh.B58String(), want)

	// One multihash under more and more contexts of one provider.
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	ai := findAddrInfo(t, 1)
	if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: *ai}); err != nil {
		t.Fatal(err)
	}
	sb = newStoreBackend(t, s)
	direct, viaIter = newHandler(t, sb), newHandler(t, findIterOnly{sb})
	mh := findMH(t, 2)
	var rs []find.ProviderResult
	for n := 1; n <= 300; n++ {
		v := store.Value{ProviderID: ai.ID, ContextID: fmt.Appendf(nil, "context-%03d", n), Metadata: []byte("\x80\x12 metadata")}
		if err := s.Put(ctx, v, mh); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, find.ProviderResult{ContextID: v.ContextID, Metadata: v.Metadata, Provider: ai})
		if n == 1 || n%50 == 0 {
			want, _ := json.Marshal(find.FindResponse{MultihashResults: []find.MultihashResult{{Multihash: mh, ProviderResults: rs}}})
			check(t, "/multihash/"+mh.B58String(), want)
		}
	}
}

// TestHandlerSharedHeaderValues checks that the header values the handler
// shares between answers cannot be changed through one answer's header:
// a wrapper that adds to them changes its own answer only.
func TestHandlerSharedHeaderValues(t *testing.T) {
	fx := newFindExtendedFixture(t)
	h := newHandler(t, newStoreBackend(t, fx.s))
	path := "/multihash/" + fx.mh.B58String()
	for i := range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		hdr := rec.Header()
		if got := hdr.Values("Content-Type"); len(got) != 1 || got[0] != "application/json; charset=utf-8" {
			t.Fatalf("answer %d: Content-Type %q", i, got)
		}
		if got := hdr.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != "*" {
			t.Fatalf("answer %d: Access-Control-Allow-Origin %q", i, got)
		}
		if got := hdr.Values("Content-Length"); len(got) != 1 || got[0] != strconv.Itoa(rec.Body.Len()) {
			t.Fatalf("answer %d: Content-Length %q for %d bytes", i, got, rec.Body.Len())
		}
		// What a middleware might do after the handler.
		hdr.Add("Content-Type", "text/x-changed")
		hdr.Add("Access-Control-Allow-Origin", "https://changed.example")
		hdr.Add("Content-Length", "0")
	}
}
