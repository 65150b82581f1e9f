package scatter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// Fault modes of a ringBackend.
const (
	faultNone = iota
	fault503  // answers 503 "catching up", as a query node behind its writers
	faultSlow // answers after ringBackend.delay, or when the request ends
	faultDown // its listener is closed
)

// ringBackend is a store-backed find handler on 127.0.0.1 behind a real
// HTTP wrapper that counts what it is asked and can be made to fail.
type ringBackend struct {
	name  string
	srv   *httptest.Server
	fault atomic.Int32
	delay time.Duration

	requests atomic.Int64 // find requests (GET or POST), faulty or not
	conns    atomic.Int64 // connections accepted
	mu       sync.Mutex
	keys     []string // every multihash asked, as B58
	posts    int
}

func (b *ringBackend) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	b.requests.Add(1)
	var asked []string
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/multihash/"):
		asked = append(asked, strings.TrimPrefix(r.URL.Path, "/multihash/"))
	case r.Method == http.MethodPost && r.URL.Path == "/multihash":
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ Multihashes []multihash.Multihash }
		if err := json.Unmarshal(body, &req); err == nil {
			for _, mh := range req.Multihashes {
				asked = append(asked, mh.B58String())
			}
		}
		b.mu.Lock()
		b.posts++
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.keys = append(b.keys, asked...)
	b.mu.Unlock()
	switch b.fault.Load() {
	case fault503:
		http.Error(w, "catching up", http.StatusServiceUnavailable)
		return
	case faultSlow:
		select {
		case <-time.After(b.delay):
		case <-r.Context().Done():
			return
		}
	}
	next.ServeHTTP(w, r)
}

func (b *ringBackend) reset() {
	b.requests.Store(0)
	b.mu.Lock()
	b.keys, b.posts = nil, 0
	b.mu.Unlock()
}

// ringPool is n query nodes holding keys multihashes placed by a ring of
// replication r over their names: each key is in the memory stores of its
// owners only, with two providers ("k<i>-a" and "k<i>-b" under context
// "c", as want holds them).
type ringPool struct {
	ring     *scatter.Ring
	backends []*ringBackend
	client   *http.Client
	keys     []multihash.Multihash
	want     map[string][]string // B58 key -> sorted provider numbers/context
}

func newRingPool(tb testing.TB, n, r, keys int) *ringPool {
	tb.Helper()
	ctx := tb.Context()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("q%d", i)
	}
	ring, err := scatter.NewRing(names, scatter.DefaultVnodes, r)
	if err != nil {
		tb.Fatal(err)
	}
	p := &ringPool{ring: ring, client: find.NewHTTPClient(), want: map[string][]string{}}
	tb.Cleanup(p.client.CloseIdleConnections)
	stores := make([]store.Store, n)
	for i := range stores {
		stores[i] = memory.New()
		s := stores[i]
		tb.Cleanup(func() { s.Close() })
	}
	for k := range keys {
		mh, _ := multihash.Sum(fmt.Appendf(nil, "ring key %d", k), multihash.SHA2_256, -1)
		p.keys = append(p.keys, mh)
		provs := []int{k % 7, 7 + k%5}
		for _, o := range ring.Owners(mh) {
			for _, prov := range provs {
				ai := gatherPeer(tb, prov)
				if err := stores[o].PutProvider(ctx, store.ProviderInfo{AddrInfo: ai}); err != nil {
					tb.Fatal(err)
				}
				if err := stores[o].Put(ctx, store.Value{ProviderID: ai.ID, ContextID: []byte("c"), Metadata: []byte("m")}, mh); err != nil {
					tb.Fatal(err)
				}
			}
		}
		var want []string
		for _, prov := range provs {
			want = append(want, fmt.Sprintf("%s/c", gatherPeer(tb, prov).ID))
		}
		slices.Sort(want)
		p.want[mh.B58String()] = want
	}
	for i := range n {
		b := &ringBackend{name: names[i]}
		h := findHandler(tb, findStoreBackend(tb, stores[i]))
		b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.ServeHTTP(w, r, h) }))
		b.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				b.conns.Add(1)
			}
		}
		b.srv.Start()
		tb.Cleanup(b.srv.Close)
		p.backends = append(p.backends, b)
	}
	return p
}

// gather returns a Gather over the pool's backends, with the ring unless
// fanOut.
func (p *ringPool) gather(tb testing.TB, fanOut bool, opts ...scatter.GatherOption) *scatter.Gather {
	tb.Helper()
	bs := make([]find.Backend, len(p.backends))
	for i, b := range p.backends {
		c, err := find.NewClient(b.srv.URL, find.WithHTTPClient(p.client))
		if err != nil {
			tb.Fatal(err)
		}
		bs[i] = c
	}
	if !fanOut {
		opts = append(opts, scatter.WithRing(p.ring))
	}
	g, err := scatter.NewGather(bs, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// setFault sets backend i's fault; faultDown closes it for good.
func (p *ringPool) setFault(i int, f int32, delay time.Duration) {
	b := p.backends[i]
	b.delay = delay
	b.fault.Store(f)
	if f == faultDown {
		b.srv.CloseClientConnections()
		b.srv.Close()
	}
}

func (p *ringPool) resetCounts() {
	for _, b := range p.backends {
		b.reset()
	}
}

// ringAnswer is a find answer as the tests read it.
type ringAnswer struct {
	status   int
	backends string // the X-IPNI-Backends header
	results  map[string][]string
}

func ringGet(t *testing.T, front string, mh multihash.Multihash) ringAnswer {
	t.Helper()
	resp, err := http.Get(front + "/multihash/" + mh.B58String())
	if err != nil {
		t.Fatal(err)
	}
	return readRingAnswer(t, resp)
}

func ringPost(t *testing.T, front string, mhs []multihash.Multihash) ringAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"Multihashes": mhs})
	resp, err := http.Post(front+"/multihash", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return readRingAnswer(t, resp)
}

func readRingAnswer(t *testing.T, resp *http.Response) ringAnswer {
	t.Helper()
	defer resp.Body.Close()
	a := ringAnswer{status: resp.StatusCode, backends: resp.Header.Get(find.HeaderBackends), results: map[string][]string{}}
	if resp.StatusCode != http.StatusOK {
		return a
	}
	var fr find.FindResponse
	if err := json.NewDecoder(resp.Body).Decode(&fr); err != nil {
		t.Fatal(err)
	}
	for _, mr := range fr.MultihashResults {
		var got []string
		for _, pr := range mr.ProviderResults {
			got = append(got, fmt.Sprintf("%s/%s", pr.Provider.ID, pr.ContextID))
		}
		slices.Sort(got)
		a.results[mr.Multihash.B58String()] = got
	}
	return a
}

// checkComplete checks that a is a complete 200 answer with every result
// of the keys mhs.
func (p *ringPool) checkComplete(t *testing.T, what string, a ringAnswer, mhs ...multihash.Multihash) {
	t.Helper()
	if a.status != http.StatusOK || a.backends != "" {
		t.Fatalf("%s: status %d, %s %q; want a complete 200", what, a.status, find.HeaderBackends, a.backends)
	}
	for _, mh := range mhs {
		k := mh.B58String()
		if got, want := a.results[k], p.want[k]; !slices.Equal(got, want) {
			t.Fatalf("%s: key %s: results %q, want %q", what, k, got, want)
		}
	}
}

// With a ring, every key is answered completely by one of its owners:
// while one query node is down, answers 503 or is slow, every lookup is
// still complete, and a slow owner does not slow it down.
func TestGatherRingHTTPOwnerFails(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		for _, tc := range []struct {
			name  string
			fault int32
		}{
			{"all up", faultNone},
			{"owner down", faultDown},
			{"owner 503", fault503},
			{"owner slow", faultSlow},
		} {
			t.Run(fmt.Sprintf("%s/hedged=%v", tc.name, hedged), func(t *testing.T) {
				testRingOwnerFails(t, tc.fault, hedged)
			})
		}
	}
}

func testRingOwnerFails(t *testing.T, fault int32, hedged bool) {
	{
		{
			p := newRingPool(t, 4, 2, 40)
			opts := []scatter.GatherOption{scatter.WithBackendTimeout(5 * time.Second)}
			if hedged {
				opts = append(opts, scatter.WithHedge(100*time.Millisecond))
			}
			g := p.gather(t, false, opts...)
			front := httptest.NewServer(findHandler(t, g))
			defer front.Close()
			p.setFault(0, fault, 3*time.Second)
			owned := 0
			for _, mh := range p.keys {
				if slices.Contains(p.ring.Owners(mh), 0) {
					owned++
				}
				start := time.Now()
				a := ringGet(t, front.URL, mh)
				p.checkComplete(t, "GET", a, mh)
				if d := time.Since(start); d > time.Second {
					t.Fatalf("lookup of %s took %v with backend q0 in fault %d", mh.B58String(), d, fault)
				}
			}
			if owned == 0 {
				t.Fatal("q0 owns no key: the test proves nothing")
			}
			st := g.Stats()
			if st.Partial != 0 {
				t.Errorf("%d partial answers", st.Partial)
			}
			// Each lookup went to its 2 owners only, and with a hedge to
			// the primary alone unless it failed or was slow.
			var asked uint64
			for _, b := range st.Backends {
				asked += b.Requests + b.Skipped
			}
			want := uint64(2 * len(p.keys))
			if hedged {
				want = uint64(len(p.keys))
				if fault != faultNone {
					want = uint64(len(p.keys) + owned) // the primary and the next when q0 is the primary
				}
				for _, mh := range p.keys {
					if fault != faultNone && p.ring.Owners(mh)[1] == 0 {
						want-- // q0 second: never asked
					}
				}
			}
			if asked != want {
				t.Errorf("%d backend requests for %d lookups, want %d", asked, len(p.keys), want)
			}
		}
	}
}

// When every owner of a key fails, the answer says so: 502 (or 504 when
// they ran out of time) with the backends header, never a false 404; the
// keys they do not both own stay complete.
func TestGatherRingHTTPAllOwnersFail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  int32
		status int
	}{
		{"down", faultDown, http.StatusBadGateway},
		{"503", fault503, http.StatusBadGateway},
		{"slow", faultSlow, http.StatusGatewayTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newRingPool(t, 4, 2, 40)
			g := p.gather(t, false, scatter.WithBackendTimeout(150*time.Millisecond),
				scatter.WithBreaker(scatter.BreakerConfig{Disabled: true}))
			front := httptest.NewServer(findHandler(t, g))
			defer front.Close()
			p.setFault(0, tc.fault, 3*time.Second)
			p.setFault(1, tc.fault, 3*time.Second)
			lost := 0
			for _, mh := range p.keys {
				a := ringGet(t, front.URL, mh)
				o := p.ring.Owners(mh)
				if !slices.Contains(o, 0) || !slices.Contains(o, 1) {
					p.checkComplete(t, "GET", a, mh)
					continue
				}
				lost++
				if a.status != tc.status || a.backends != "0/2" {
					t.Errorf("key owned by the failed q0 and q1: status %d, %s %q; want %d, 0/2", a.status, find.HeaderBackends, a.backends, tc.status)
				}
			}
			if lost == 0 {
				t.Fatal("no key is owned by both q0 and q1: the test proves nothing")
			}
			// A batch holding such keys: the others are answered, and the
			// answer is marked partial.
			a := ringPost(t, front.URL, p.keys)
			if a.status != http.StatusOK || a.backends != "0/2" {
				t.Errorf("batch: status %d, %s %q; want 200 marked 0/2", a.status, find.HeaderBackends, a.backends)
			}
			if got := len(a.results); got != len(p.keys)-lost {
				t.Errorf("batch: %d keys answered, want %d", got, len(p.keys)-lost)
			}
		})
	}
}

// A batch lookup is split by owner: each query node gets one POST with
// exactly the keys it owns, and the joined answer is complete, also while
// an owner answers 503.
func TestGatherRingHTTPBatchSplit(t *testing.T) {
	p := newRingPool(t, 4, 2, 60)
	g := p.gather(t, false)
	front := httptest.NewServer(findHandler(t, g))
	defer front.Close()

	a := ringPost(t, front.URL, p.keys)
	p.checkComplete(t, "batch", a, p.keys...)
	for i, b := range p.backends {
		var want []string
		for _, mh := range p.keys {
			if slices.Contains(p.ring.Owners(mh), i) {
				want = append(want, mh.B58String())
			}
		}
		b.mu.Lock()
		got, posts := slices.Clone(b.keys), b.posts
		b.mu.Unlock()
		slices.Sort(got)
		slices.Sort(want)
		if posts != 1 || b.requests.Load() != 1 {
			t.Errorf("%s: %d requests, %d POSTs; want 1", b.name, b.requests.Load(), posts)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s asked %d keys, want the %d it owns", b.name, len(got), len(want))
		}
	}

	p.resetCounts()
	p.setFault(2, fault503, 0)
	a = ringPost(t, front.URL, p.keys)
	p.checkComplete(t, "batch with q2 answering 503", a, p.keys...)
}

// With a hedge, a batch goes to each key's primary owner first: each query
// node gets one POST with the keys it is primary for. Keys whose primary
// answers 503 go to their next owner at once (well before the hedge
// delay); keys whose primary is slow go to it once the delay has passed.
func TestGatherRingHTTPBatchHedged(t *testing.T) {
	p := newRingPool(t, 4, 2, 60)
	const hedge = time.Second
	g := p.gather(t, false, scatter.WithHedge(hedge), scatter.WithBreaker(scatter.BreakerConfig{Disabled: true}))
	front := httptest.NewServer(findHandler(t, g))
	defer front.Close()

	a := ringPost(t, front.URL, p.keys)
	p.checkComplete(t, "batch", a, p.keys...)
	for i, b := range p.backends {
		var want []string
		for _, mh := range p.keys {
			if p.ring.Owners(mh)[0] == i {
				want = append(want, mh.B58String())
			}
		}
		b.mu.Lock()
		got, posts := slices.Clone(b.keys), b.posts
		b.mu.Unlock()
		slices.Sort(got)
		slices.Sort(want)
		if len(want) > 0 && (posts != 1 || b.requests.Load() != 1) {
			t.Errorf("%s: %d requests, %d POSTs; want 1", b.name, b.requests.Load(), posts)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s asked %d keys, want the %d it is primary for", b.name, len(got), len(want))
		}
	}

	p.setFault(2, fault503, 0)
	start := time.Now()
	a = ringPost(t, front.URL, p.keys)
	p.checkComplete(t, "batch with q2 answering 503", a, p.keys...)
	if d := time.Since(start); d >= hedge {
		t.Errorf("batch with q2 answering 503 took %v, not less than the hedge delay %v", d, hedge)
	}

	p.setFault(2, faultSlow, 10*time.Second)
	start = time.Now()
	a = ringPost(t, front.URL, p.keys)
	p.checkComplete(t, "batch with q2 slow", a, p.keys...)
	if d := time.Since(start); d < hedge || d > hedge+2*time.Second {
		t.Errorf("batch with q2 slow took %v, want about the hedge delay %v", d, hedge)
	}
}
