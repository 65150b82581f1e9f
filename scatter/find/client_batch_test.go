package find_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// Client.FindBatch against a real handler: a batch larger than the
// handler's limit goes in several POSTs and comes back whole; "not found"
// is no error; a 503 is a StatusError for every key; a 200 the remote
// marks incomplete gives its results with an IncompleteError, so that a
// missing key is not taken for "not found".
func TestClientFindBatch(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	defer s.Close()
	prov := findPeer(t, 1)
	var mhs []multihash.Multihash
	for i := range find.DefaultBatchLimit + 5 {
		mh := findMH(t, i)
		mhs = append(mhs, mh)
		if i%100 == 3 {
			if err := s.Put(ctx, store.Value{ProviderID: prov, ContextID: []byte("c"), Metadata: []byte("m")}, mh); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := newHandler(t, newStoreBackend(t, s))
	var mode atomic.Int32 // 0 as is, 1: 503, 2: marked incomplete
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		switch mode.Load() {
		case 1:
			http.Error(w, "catching up", http.StatusServiceUnavailable)
			return
		case 2:
			w.Header().Set(find.HeaderBackends, "1/2")
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := find.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	check := func(name string, answers []find.BatchResult, wantErr func(error) bool) {
		t.Helper()
		if len(answers) != len(mhs) {
			t.Fatalf("%s: %d answers for %d keys", name, len(answers), len(mhs))
		}
		for i, a := range answers {
			want := 0
			if i%100 == 3 && mode.Load() != 1 {
				want = 1
			}
			if len(a.Results) != want || (want == 1 && a.Results[0].Provider.ID != prov) {
				t.Fatalf("%s: key %d: %d results, want %d", name, i, len(a.Results), want)
			}
			if !wantErr(a.Err) {
				t.Fatalf("%s: key %d: error %v", name, i, a.Err)
			}
		}
	}
	check("complete", c.FindBatch(ctx, mhs), func(err error) bool { return err == nil })
	if n := posts.Swap(0); n != 2 {
		t.Errorf("%d POSTs for %d keys, want 2", n, len(mhs))
	}
	none := c.FindBatch(ctx, mhs[:3])
	for i, a := range none {
		if a.Err != nil || len(a.Results) != 0 {
			t.Errorf("unknown key %d: %+v, want not found", i, a)
		}
	}
	mode.Store(1)
	check("503", c.FindBatch(ctx, mhs), func(err error) bool {
		se, ok := errors.AsType[*find.StatusError](err)
		return ok && se.Code == http.StatusServiceUnavailable
	})
	mode.Store(2)
	check("marked incomplete", c.FindBatch(ctx, mhs), func(err error) bool {
		_, ok := errors.AsType[*find.IncompleteError](err)
		return ok
	})
}
