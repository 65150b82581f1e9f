package localpool

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/scatter/find"
)

// checkPeer is the provider of the entries of the check tests.
const checkPeer = "12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA"

// checkEntries are n entries of one value each.
func checkEntries(t *testing.T, n int) []publishernode.Entry {
	t.Helper()
	var out []publishernode.Entry
	for i := range n {
		mh, err := multihash.Sum([]byte{byte(i)}, multihash.SHA2_256, -1)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, publishernode.Entry{Multihash: mh.B58String(),
			Values: []publishernode.Value{{ProviderID: checkPeer, ContextID: []byte("c"), Metadata: []byte{0x80, 0x12}}}})
	}
	return out
}

// slowFind is a find API answering every entry truly (or, for those in
// drop, with nothing), holding each multihash's first slowFirst requests
// for delay, or every request when slowFirst is negative.
func slowFind(t *testing.T, entries []publishernode.Entry, delay time.Duration, slowFirst int, drop map[string]bool) *httptest.Server {
	t.Helper()
	id, err := peer.Decode(checkPeer)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b58 := strings.TrimPrefix(r.URL.Path, "/multihash/")
		mu.Lock()
		asked[b58]++
		n := asked[b58]
		mu.Unlock()
		if slowFirst < 0 || n <= slowFirst {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if drop[b58] {
			http.NotFound(w, r)
			return
		}
		mh, _ := multihash.FromB58String(b58)
		fr := find.FindResponse{MultihashResults: []find.MultihashResult{{Multihash: mh,
			ProviderResults: []find.ProviderResult{{Provider: &peer.AddrInfo{ID: id}, ContextID: []byte("c"), Metadata: []byte{0x80, 0x12}}}}}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fr)
	}))
	t.Cleanup(s.Close)
	return s
}

// A lookup that passes Config.LookupTimeout is asked again within the
// check's context: a front end slow on the first try of each lookup
// still gives a complete check, with nothing timed out.
func TestCheckRetriesTimeouts(t *testing.T) {
	es := checkEntries(t, 12)
	s := slowFind(t, es, 300*time.Millisecond, 1, nil)
	p := &Pool{cfg: Config{LookupTimeout: 50 * time.Millisecond}, hc: &http.Client{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := p.checkAt(ctx, s.URL, es)
	if !c.OK() || c.Complete != len(es) || c.TimedOut != 0 {
		t.Fatalf("check of a front end slow on each first try: %v, want %d/%d complete, none timed out", c, len(es), len(es))
	}
}

// A front end too slow for every try within the check's context: each
// lookup counts as timed out, apart from wrong answers (none missing,
// none failed), and the check is not OK; a truly missing value is still
// counted missing, and not as a timeout.
func TestCheckCountsTimeoutsApart(t *testing.T) {
	es := checkEntries(t, 6)
	p := &Pool{cfg: Config{LookupTimeout: 20 * time.Millisecond}, hc: &http.Client{}}

	slow := slowFind(t, es, time.Hour, -1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	c := p.checkAt(ctx, slow.URL, es)
	cancel()
	if c.OK() || c.TimedOut != len(es) || c.Wrong() || c.Missing != 0 || c.Failed != 0 || c.Complete != 0 {
		t.Errorf("check of a front end that never answers in time: %v, want all %d timed out and nothing wrong", c, len(es))
	}
	if !strings.Contains(c.String(), "6 timed out") || len(c.Examples) == 0 || !strings.Contains(c.Examples[0], "no answer in time") {
		t.Errorf("check %v, examples %q: want the timeouts named", c, c.Examples)
	}

	drop := map[string]bool{es[0].Multihash: true}
	missing := slowFind(t, es, 0, 0, drop)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c = p.checkAt(ctx, missing.URL, es)
	if c.OK() || c.Missing != 1 || c.TimedOut != 0 || !c.Wrong() || c.Complete != len(es)-1 {
		t.Errorf("check with one value truly missing: %v, want 1 missing, none timed out", c)
	}
}

// isTimeout tells a lookup that ran out of time from other failures.
func TestIsTimeout(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{context.Canceled, true},
		{errors.New("GET x: 500 Internal Server Error"), false},
		{errors.Join(errors.New("GET x"), context.DeadlineExceeded), true},
	} {
		if got := isTimeout(c.err); got != c.want {
			t.Errorf("isTimeout(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
