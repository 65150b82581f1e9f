package scatter

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/scatter/find"
)

var errGatherBoom = errors.New("boom")

// gatherFake is an in-memory Backend for the gather tests. Its fields are
// set before a call and not changed while one runs.
type gatherFake struct {
	results []find.ProviderResult
	err     error         // yielded after the results
	delay   time.Duration // before answering, unless ctx is done first
	wait    chan struct{} // when non-nil, closed before answering
	// canceled, when non-nil, is closed when a call sees its ctx done.
	canceled chan struct{}

	providers []find.ProviderInfo
	provErr   error

	calls atomic.Int32
}

func (f *gatherFake) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		f.calls.Add(1)
		if err := f.pause(ctx); err != nil {
			yield(find.ProviderResult{}, err)
			return
		}
		for _, r := range f.results {
			if !yield(r, nil) {
				return
			}
		}
		if f.err != nil {
			yield(find.ProviderResult{}, f.err)
		}
	}
}

func (f *gatherFake) pause(ctx context.Context) error {
	var timer <-chan time.Time
	if f.delay > 0 {
		timer = time.After(f.delay)
	}
	for timer != nil || f.wait != nil {
		select {
		case <-timer:
			timer = nil
		case <-f.wait:
			return nil
		case <-ctx.Done():
			if f.canceled != nil {
				close(f.canceled)
			}
			return ctx.Err()
		}
	}
	return nil
}

func (f *gatherFake) Providers(ctx context.Context) ([]find.ProviderInfo, error) {
	f.calls.Add(1)
	if err := f.pause(ctx); err != nil {
		return nil, err
	}
	return f.providers, f.provErr
}

func (f *gatherFake) Provider(ctx context.Context, id peer.ID) (find.ProviderInfo, error) {
	f.calls.Add(1)
	if err := f.pause(ctx); err != nil {
		return find.ProviderInfo{}, err
	}
	if f.provErr != nil {
		return find.ProviderInfo{}, f.provErr
	}
	for _, p := range f.providers {
		if p.AddrInfo.ID == id {
			return p, nil
		}
	}
	return find.ProviderInfo{}, fmt.Errorf("fake: %s: %w", id, find.ErrNotFound)
}

// gres is a result of provider p for context c with metadata md.
func gres(p, c, md string) find.ProviderResult {
	return find.ProviderResult{ContextID: []byte(c), Metadata: []byte(md), Provider: &peer.AddrInfo{ID: peer.ID(p)}}
}

// prString is "provider/context=metadata".
func prString(r find.ProviderResult) string {
	return fmt.Sprintf("%s/%s=%s", string(r.Provider.ID), r.ContextID, r.Metadata)
}

var gatherMH = func() multihash.Multihash {
	mh, err := multihash.Sum([]byte("gather"), multihash.SHA2_256, -1)
	if err != nil {
		panic(err)
	}
	return mh
}()

func gatherBackends(fs ...*gatherFake) []find.Backend {
	bs := make([]find.Backend, len(fs))
	for i, f := range fs {
		bs[i] = f
	}
	return bs
}

// gatherCollect reads a whole Find, returning its results as prString and its
// error.
func gatherCollect(t *testing.T, seq iter.Seq2[find.ProviderResult, error]) ([]string, error) {
	t.Helper()
	var got []string
	var last error
	for r, err := range seq {
		if last != nil {
			t.Fatalf("yield after the error %v", last)
		}
		if err != nil {
			last = err
			continue
		}
		got = append(got, prString(r))
	}
	return got, last
}

func TestGatherMerge(t *testing.T) {
	tests := []struct {
		name     string
		backends []*gatherFake
		timeout  time.Duration
		want     []string // in any order
		wantErr  *find.PartialError
		errIs    error
	}{
		{
			name:     "first duplicate keeps the rest",
			backends: []*gatherFake{{results: []find.ProviderResult{gres("A", "c", "m")}}, {results: []find.ProviderResult{gres("A", "c", "m"), gres("B", "c", "m")}}},
			want:     []string{"A/c=m", "B/c=m"},
		},
		{
			name: "union of overlapping lists",
			backends: []*gatherFake{
				{results: []find.ProviderResult{gres("A", "1", "m"), gres("B", "1", "m"), gres("C", "1", "m")}},
				{results: []find.ProviderResult{gres("C", "1", "m"), gres("A", "2", "m"), gres("B", "1", "m"), gres("D", "1", "m")}},
				{results: []find.ProviderResult{gres("D", "1", "m"), gres("A", "1", "m"), gres("E", "9", "m")}},
			},
			want: []string{"A/1=m", "B/1=m", "C/1=m", "A/2=m", "D/1=m", "E/9=m"},
		},
		{
			name:     "same provider other context is another result",
			backends: []*gatherFake{{results: []find.ProviderResult{gres("A", "1", "m")}}, {results: []find.ProviderResult{gres("A", "2", "m")}}},
			want:     []string{"A/1=m", "A/2=m"},
		},
		{
			name:     "duplicates within one backend",
			backends: []*gatherFake{{results: []find.ProviderResult{gres("A", "1", "m"), gres("A", "1", "m"), gres("B", "1", "m")}}},
			want:     []string{"A/1=m", "B/1=m"},
		},
		{
			name:     "empty and results",
			backends: []*gatherFake{{}, {results: []find.ProviderResult{gres("A", "c", "m")}}, {}},
			want:     []string{"A/c=m"},
		},
		{
			name:     "all not found",
			backends: []*gatherFake{{}, {}, {}},
		},
		{
			name:     "all fail",
			backends: []*gatherFake{{err: errGatherBoom}, {err: errGatherBoom}, {err: errGatherBoom}},
			wantErr:  &find.PartialError{Answered: 0, Total: 3},
			errIs:    errGatherBoom,
		},
		{
			name:     "all time out",
			backends: []*gatherFake{{delay: time.Hour}, {delay: time.Hour}},
			timeout:  100 * time.Millisecond,
			wantErr:  &find.PartialError{Answered: 0, Total: 2, TimedOut: 2},
			errIs:    context.DeadlineExceeded,
		},
		{
			name: "some fail, with results",
			backends: []*gatherFake{
				{results: []find.ProviderResult{gres("A", "c", "m")}},
				{results: []find.ProviderResult{gres("B", "c", "m")}, err: errGatherBoom},
				{delay: time.Hour},
			},
			timeout: time.Second,
			want:    []string{"A/c=m", "B/c=m"},
			wantErr: &find.PartialError{Answered: 1, Total: 3, TimedOut: 1},
			errIs:   errGatherBoom,
		},
		{
			name:     "some fail, none found",
			backends: []*gatherFake{{}, {err: errGatherBoom}},
			wantErr:  &find.PartialError{Answered: 1, Total: 2},
			errIs:    errGatherBoom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opts []GatherOption
				if tt.timeout > 0 {
					opts = append(opts, WithBackendTimeout(tt.timeout))
				}
				g, err := NewGather(gatherBackends(tt.backends...), opts...)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				got, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
				if tt.timeout > 0 && time.Since(start) > tt.timeout {
					t.Errorf("Find took %v, more than the backend timeout %v", time.Since(start), tt.timeout)
				}
				slices.Sort(got)
				want := slices.Sorted(slices.Values(tt.want))
				if !slices.Equal(got, want) {
					t.Errorf("results %q, want %q", got, want)
				}
				checkPartialErr(t, err, tt.wantErr, tt.errIs)
			})
		})
	}
}

func checkPartialErr(t *testing.T, err error, want *find.PartialError, is error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	var pe *find.PartialError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v, want a *find.PartialError", err)
	}
	if pe.Answered != want.Answered || pe.Total != want.Total || pe.TimedOut != want.TimedOut {
		t.Errorf("PartialError %d/%d answered, %d timed out; want %d/%d, %d", pe.Answered, pe.Total, pe.TimedOut, want.Answered, want.Total, want.TimedOut)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("error %v does not wrap %v", err, is)
	}
	if errors.Is(err, find.ErrNotFound) {
		t.Errorf("error %v wraps find.ErrNotFound", err)
	}
}

// When backends disagree on metadata, the result seen first is kept and the
// disagreement reported.
func TestGatherMetadataDisagreement(t *testing.T) {
	first := &gatherFake{results: []find.ProviderResult{gres("A", "c", "first")}}
	second := &gatherFake{results: []find.ProviderResult{gres("A", "c", "second"), gres("B", "c", "m")}, wait: make(chan struct{})}
	var hooked atomic.Int32
	g, err := NewGather(gatherBackends(first, second), WithHooks(GatherHooks{
		OnDisagreement: func(mh multihash.Multihash, p peer.ID, c []byte, backend int) {
			if p != "A" || string(c) != "c" || backend != 1 || !slices.Equal(mh, gatherMH) {
				t.Errorf("OnDisagreement(%v, %s, %q, %d)", mh, p, c, backend)
			}
			hooked.Add(1)
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r, err := range g.Find(t.Context(), gatherMH) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, prString(r))
		if len(got) == 1 {
			close(second.wait) // second answers only after first was seen
		}
	}
	if want := []string{"A/c=first", "B/c=m"}; !slices.Equal(got, want) {
		t.Errorf("results %q, want %q", got, want)
	}
	if hooked.Load() != 1 || g.Stats().Disagreements != 1 {
		t.Errorf("disagreements: hook %d, stats %d; want 1", hooked.Load(), g.Stats().Disagreements)
	}
}

// The first result reaches the caller while another backend still blocks.
func TestGatherStreamsFirstResult(t *testing.T) {
	fast := &gatherFake{results: []find.ProviderResult{gres("A", "c", "m")}}
	slow := &gatherFake{results: []find.ProviderResult{gres("B", "c", "m")}, wait: make(chan struct{})}
	g, err := NewGather(gatherBackends(slow, fast))
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan string)
	errc := make(chan error, 1)
	go func() {
		defer close(results)
		for r, err := range g.Find(t.Context(), gatherMH) {
			if err != nil {
				errc <- err
				return
			}
			results <- prString(r)
		}
		errc <- nil
	}()
	select {
	case r := <-results:
		if r != "A/c=m" {
			t.Fatalf("first result %s, want A/c=m", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no result while the slow backend blocks")
	}
	// The slow backend was asked and is still blocked (its wait is open).
	for deadline := time.Now().Add(10 * time.Second); slow.calls.Load() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("slow backend not asked")
		}
	}
	close(slow.wait)
	var rest []string
	for r := range results {
		rest = append(rest, r)
	}
	if err := <-errc; err != nil || !slices.Equal(rest, []string{"B/c=m"}) {
		t.Errorf("rest %q, error %v; want [B/c=m], none", rest, err)
	}
}

// Stopping early cancels the backends still working; nothing they started
// outlives Find, and they are not blamed for it.
func TestGatherEarlyBreak(t *testing.T) {
	fast := &gatherFake{results: []find.ProviderResult{gres("A", "c", "m"), gres("B", "c", "m")}}
	blocked := &gatherFake{wait: make(chan struct{}), canceled: make(chan struct{})}
	g, err := NewGather(gatherBackends(fast, blocked))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range g.Find(t.Context(), gatherMH) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d results", n)
	}
	select {
	case <-blocked.canceled:
	default:
		t.Error("the blocked backend's request was not canceled when Find returned")
	}
	goleak.VerifyNone(t)
	for _, b := range g.Stats().Backends {
		if b.Failures != 0 || b.State != BreakerClosed {
			t.Errorf("backend %s: %d failures, breaker %v after the caller stopped", b.Name, b.Failures, b.State)
		}
	}
}

// A caller's cancellation ends Find with a PartialError wrapping it, and
// does not count against the backends.
func TestGatherCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := &gatherFake{results: []find.ProviderResult{gres("A", "c", "m")}}
		blocked := &gatherFake{wait: make(chan struct{})}
		g, err := NewGather(gatherBackends(fast, blocked))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var got []string
		var last error
		for r, err := range g.Find(ctx, gatherMH) {
			if err != nil {
				last = err
				continue
			}
			got = append(got, prString(r))
			cancel()
		}
		if !slices.Equal(got, []string{"A/c=m"}) {
			t.Errorf("results %q", got)
		}
		checkPartialErr(t, last, &find.PartialError{Answered: 1, Total: 2}, context.Canceled)
		if s := g.Stats().Backends[1]; s.Failures != 0 || s.Requests != 1 {
			t.Errorf("blocked backend: %+v", s)
		}
	})
}

// A slow backend trips its breaker (timeouts are failures), is skipped
// while open, probed when half-open with a growing backoff, and closes
// once it is fast again.
func TestGatherBreakerSlowBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := &gatherFake{results: []find.ProviderResult{gres("A", "c", "m")}}
		slow := &gatherFake{results: []find.ProviderResult{gres("B", "c", "m")}, delay: time.Hour}
		var mu sync.Mutex
		var changes []string
		g, err := NewGather(gatherBackends(fast, slow),
			WithBackendTimeout(100*time.Millisecond),
			WithBreaker(BreakerConfig{Failures: 3, Window: time.Second, BackoffMin: time.Second, BackoffMax: 2 * time.Second, Probes: 1, Successes: 2}),
			WithHooks(GatherHooks{OnStateChange: func(b int, from, to BreakerState) {
				mu.Lock()
				defer mu.Unlock()
				changes = append(changes, fmt.Sprintf("%d:%v>%v", b, from, to))
			}}),
		)
		if err != nil {
			t.Fatal(err)
		}
		lookup := func(wantRes []string, want *find.PartialError, is error) {
			t.Helper()
			got, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
			slices.Sort(got)
			if !slices.Equal(got, wantRes) {
				t.Errorf("results %q, want %q", got, wantRes)
			}
			checkPartialErr(t, err, want, is)
		}
		timedOut := &find.PartialError{Answered: 1, Total: 2, TimedOut: 1}
		skipped := &find.PartialError{Answered: 1, Total: 2}
		for range 3 {
			lookup([]string{"A/c=m"}, timedOut, context.DeadlineExceeded)
		}
		if s := g.Stats().Backends[1]; s.State != BreakerOpen || s.TimedOut != 3 || s.Failures != 3 {
			t.Fatalf("slow backend after 3 timeouts: %+v", s)
		}
		// Open: skipped, without waiting for it.
		start := time.Now()
		lookup([]string{"A/c=m"}, skipped, ErrBreakerOpen)
		if time.Since(start) != 0 || slow.calls.Load() != 3 {
			t.Errorf("open breaker: Find took %v, slow backend called %d times", time.Since(start), slow.calls.Load())
		}
		// After the backoff, one probe, which times out: open for twice as
		// long.
		time.Sleep(time.Second)
		lookup([]string{"A/c=m"}, timedOut, context.DeadlineExceeded)
		time.Sleep(time.Second)
		lookup([]string{"A/c=m"}, skipped, ErrBreakerOpen)
		time.Sleep(time.Second)
		// The backend recovers: two probes close the breaker.
		slow.delay = 0
		lookup([]string{"A/c=m", "B/c=m"}, nil, nil)
		if s := g.Stats().Backends[1]; s.State != BreakerHalfOpen {
			t.Errorf("after one probe success the breaker is %v", s.State)
		}
		lookup([]string{"A/c=m", "B/c=m"}, nil, nil)
		want := []string{"1:closed>open", "1:open>half-open", "1:half-open>open", "1:open>half-open", "1:half-open>closed"}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(changes, want) {
			t.Errorf("state changes %q, want %q", changes, want)
		}
		if s := g.Stats(); s.Backends[1].Skipped != 2 || s.Backends[0].Failures != 0 || s.Partial != 6 {
			t.Errorf("stats %+v", s)
		}
	})
}

// In half-open state only Probes requests are in flight at once; the others
// are skipped.
func TestGatherHalfOpenProbeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &gatherFake{err: errGatherBoom}
		g, err := NewGather(gatherBackends(b), WithBreaker(BreakerConfig{Failures: 1, BackoffMin: time.Second, Probes: 1, Successes: 1}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = gatherCollect(t, g.Find(t.Context(), gatherMH))
		checkPartialErr(t, err, &find.PartialError{Total: 1}, errGatherBoom)
		time.Sleep(time.Second)
		b.err, b.wait = nil, make(chan struct{})
		done := make(chan error)
		go func() {
			_, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
			done <- err
		}()
		synctest.Wait() // the probe is in flight
		_, err = gatherCollect(t, g.Find(t.Context(), gatherMH))
		checkPartialErr(t, err, &find.PartialError{Total: 1}, ErrBreakerOpen)
		close(b.wait)
		if err := <-done; err != nil {
			t.Errorf("probe: %v", err)
		}
		if _, err := gatherCollect(t, g.Find(t.Context(), gatherMH)); err != nil {
			t.Errorf("after the probe: %v", err)
		}
		if b.calls.Load() != 3 {
			t.Errorf("backend called %d times, want 3", b.calls.Load())
		}
	})
}

func TestGatherRing(t *testing.T) {
	fakes := make([]*gatherFake, 6)
	names := make([]string, len(fakes))
	for i := range fakes {
		fakes[i] = &gatherFake{results: []find.ProviderResult{gres(fmt.Sprint("P", i), "c", "m")}}
		names[i] = fmt.Sprintf("indexer-%d", i)
	}
	ring, err := NewRing(names, 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGather(gatherBackends(fakes...), WithRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	owners := ring.Owners(gatherMH)
	got, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{fmt.Sprintf("P%d/c=m", owners[0]), fmt.Sprintf("P%d/c=m", owners[1])}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("results %q, want those of owners %v", got, owners)
	}
	for i, f := range fakes {
		if asked := f.calls.Load() == 1; asked != slices.Contains(owners, i) {
			t.Errorf("backend %d asked %d times; owners %v", i, f.calls.Load(), owners)
		}
	}
	if s := g.Stats().Backends[owners[0]]; s.Name != names[owners[0]] {
		t.Errorf("backend named %q, want the ring's %q", s.Name, names[owners[0]])
	}

	fakes[owners[0]].err = errGatherBoom
	_, err = gatherCollect(t, g.Find(t.Context(), gatherMH))
	checkPartialErr(t, err, &find.PartialError{Answered: 1, Total: 2}, errGatherBoom)
	if !strings.Contains(err.Error(), names[owners[0]]) {
		t.Errorf("error %q does not name the backend", err)
	}

	if _, err := NewGather(gatherBackends(fakes[:5]...), WithRing(ring)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("ring of 6 over 5 backends: %v", err)
	}
}

func TestNewGatherInvalid(t *testing.T) {
	one := gatherBackends(&gatherFake{})
	for name, tc := range map[string]struct {
		bs   []find.Backend
		opts []GatherOption
	}{
		"no backends":     {nil, nil},
		"nil backend":     {[]find.Backend{nil}, nil},
		"timeout":         {one, []GatherOption{WithBackendTimeout(0)}},
		"cache":           {one, []GatherOption{WithCache(0, time.Second, 0)}},
		"breaker backoff": {one, []GatherOption{WithBreaker(BreakerConfig{BackoffMin: time.Minute, BackoffMax: time.Second})}},
		"breaker":         {one, []GatherOption{WithBreaker(BreakerConfig{Failures: -1})}},
		"names":           {one, []GatherOption{WithBackendNames("a", "b")}},
		"ring":            {one, []GatherOption{WithRing(nil)}},
	} {
		if _, err := NewGather(tc.bs, tc.opts...); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}

func TestGatherCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mh := func(s string) multihash.Multihash {
			m, _ := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
			return m
		}
		found := &gatherFake{results: []find.ProviderResult{gres("A", "c", "m")}}
		g, err := NewGather(gatherBackends(found), WithCache(2, 10*time.Second, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ask := func(key string, wantCalls int32, want ...string) {
			t.Helper()
			got, err := gatherCollect(t, g.Find(t.Context(), mh(key)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: results %q, want %q", key, got, want)
			}
			if c := found.calls.Load(); c != wantCalls {
				t.Errorf("%s: backend called %d times, want %d", key, c, wantCalls)
			}
		}
		ask("x", 1, "A/c=m")
		ask("x", 1, "A/c=m") // hit
		time.Sleep(10 * time.Second)
		ask("x", 2, "A/c=m") // expired

		// Negative entries expire sooner.
		found.results = nil
		ask("y", 3)
		time.Sleep(time.Second - time.Millisecond)
		ask("y", 3)
		time.Sleep(time.Millisecond)
		ask("y", 4)

		// Least recently used is evicted: x was used after y.
		found.results = []find.ProviderResult{gres("A", "c", "m")}
		ask("x", 4, "A/c=m")
		ask("z", 5, "A/c=m")
		ask("x", 5, "A/c=m")
		ask("y", 6, "A/c=m")

		// Partial answers and errors are not cached, nor an answer the
		// caller stopped reading.
		found.err = errGatherBoom
		for range 2 {
			got, err := gatherCollect(t, g.Find(t.Context(), mh("p")))
			if len(got) != 1 || !errors.Is(err, errGatherBoom) {
				t.Errorf("partial: %q, %v", got, err)
			}
		}
		found.err = nil
		for range g.Find(t.Context(), mh("q")) {
			break
		}
		ask("q", 10, "A/c=m")

		s := g.Stats()
		if s.CacheHits != 4 || s.CacheMisses != 10 || s.CacheEntries != 2 {
			t.Errorf("cache stats: %d hits, %d misses, %d entries; want 4, 10, 2", s.CacheHits, s.CacheMisses, s.CacheEntries)
		}
	})
}

// A cached partial "not found" would be the reference's false 404.
func TestGatherCacheNoPartialNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		empty, failing := &gatherFake{}, &gatherFake{err: errGatherBoom}
		g, err := NewGather(gatherBackends(empty, failing), WithCache(8, time.Minute, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
			checkPartialErr(t, err, &find.PartialError{Answered: 1, Total: 2}, errGatherBoom)
		}
		if empty.calls.Load() != 2 || g.Stats().CacheEntries != 0 {
			t.Errorf("partial answer cached: %d calls, %d entries", empty.calls.Load(), g.Stats().CacheEntries)
		}
	})
}

func gatherCid(s string) cid.Cid {
	mh, _ := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	return cid.NewCidV1(cid.Raw, mh)
}

func TestGatherProviders(t *testing.T) {
	frozenAt := gatherCid("frozen-at")
	// Indexer 0 froze holding P1; indexer 1 continues it after a handoff
	// and has processed newer advertisements.
	frozen := &gatherFake{providers: []find.ProviderInfo{
		{AddrInfo: peer.AddrInfo{ID: "P1"}, LastAdvertisement: frozenAt, LastAdvertisementTime: "2025-01-01T00:00:00Z", FrozenAt: frozenAt, FrozenAtTime: "2025-01-01T00:00:05Z", IndexCount: 1},
		{AddrInfo: peer.AddrInfo{ID: "P2"}, LastAdvertisementTime: "2025-01-02T00:00:00Z", IndexCount: 2},
		{AddrInfo: peer.AddrInfo{ID: "P4"}, LastAdvertisementTime: "2025-01-01T00:00:00Z", IndexCount: 40},
	}}
	continuing := &gatherFake{providers: []find.ProviderInfo{
		{AddrInfo: peer.AddrInfo{ID: "P3"}, LastAdvertisementTime: "bad time", IndexCount: 3},
		{AddrInfo: peer.AddrInfo{ID: "P1"}, LastAdvertisement: gatherCid("newer"), LastAdvertisementTime: "2025-03-01T00:00:00+01:00", IndexCount: 10},
		{AddrInfo: peer.AddrInfo{ID: "P2"}, LastAdvertisementTime: "2025-01-01T23:00:00Z", IndexCount: 20},
		{AddrInfo: peer.AddrInfo{ID: "P4"}, LastAdvertisementTime: "2025-01-01T00:00:00Z", IndexCount: 41},
	}}
	g, err := NewGather(gatherBackends(frozen, continuing))
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Providers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, p := range got {
		summary = append(summary, fmt.Sprintf("%s:%d:%v:%s", string(p.AddrInfo.ID), p.IndexCount, p.FrozenAt.Defined(), p.FrozenAtTime))
	}
	want := []string{
		"P1:10:true:2025-01-01T00:00:05Z", // newest, with FrozenAt carried over
		"P2:2:false:",                     // newest
		"P4:40:false:",                    // tie: the first backend's
		"P3:3:false:",                     // only one, unparsable time
	}
	if !slices.Equal(summary, want) {
		t.Errorf("providers %q, want %q", summary, want)
	}
	if !got[0].FrozenAt.Equals(frozenAt) || !got[0].LastAdvertisement.Equals(gatherCid("newer")) {
		t.Errorf("P1 = %+v", got[0])
	}

	p1, err := g.Provider(t.Context(), "P1")
	if err != nil || p1.IndexCount != 10 || !p1.FrozenAt.Equals(frozenAt) {
		t.Errorf("Provider(P1) = %+v, %v", p1, err)
	}
	if _, err := g.Provider(t.Context(), "P9"); !errors.Is(err, find.ErrNotFound) {
		t.Errorf("Provider(P9): %v, want find.ErrNotFound", err)
	}

	// One backend failing: what was found is returned; what was not found
	// is not "not found".
	continuing.provErr = errGatherBoom
	p2, err := g.Provider(t.Context(), "P2")
	if err != nil || p2.IndexCount != 2 {
		t.Errorf("Provider(P2) with a backend down = %+v, %v", p2, err)
	}
	_, err = g.Provider(t.Context(), "P3")
	checkPartialErr(t, err, &find.PartialError{Answered: 1, Total: 2}, errGatherBoom)
	list, err := g.Providers(t.Context())
	checkPartialErr(t, err, &find.PartialError{Answered: 1, Total: 2}, errGatherBoom)
	if len(list) != 3 {
		t.Errorf("Providers with a backend down: %d records, want the 3 of the other", len(list))
	}
}
