package scatter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/scatter/find"
)

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
	o0, o1 := fakes[owners[0]], fakes[owners[1]]
	lookup := func() ([]string, error) {
		t.Helper()
		for _, f := range fakes {
			f.calls.Store(0)
		}
		got, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
		slices.Sort(got)
		return got, err
	}

	// The first complete answer wins: the owners are not merged, and only
	// they are asked.
	o1.delay = time.Second
	got, err := lookup()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprintf("P%d/c=m", owners[0])}; !slices.Equal(got, want) {
		t.Errorf("results %q, want the first owner's %q", got, want)
	}
	for i, f := range fakes {
		if asked := f.calls.Load() == 1; asked != slices.Contains(owners, i) {
			t.Errorf("backend %d asked %d times; owners %v", i, f.calls.Load(), owners)
		}
	}
	if s := g.Stats().Backends[owners[0]]; s.Name != names[owners[0]] {
		t.Errorf("backend named %q, want the ring's %q", s.Name, names[owners[0]])
	}
	if s := g.Stats().Backends[owners[1]]; s.Failures != 0 {
		t.Errorf("the cancelled owner counts as failed: %+v", s)
	}

	// A failed owner does not count: the other's answer is complete.
	o1.delay = 0
	o0.err = errGatherBoom
	o0.results = nil
	if got, err = lookup(); err != nil || !slices.Equal(got, []string{fmt.Sprintf("P%d/c=m", owners[1])}) {
		t.Errorf("owner %d failing: %q, %v; want owner %d's answer", owners[0], got, err, owners[1])
	}

	// A leader that fails after some results: the other owner completes
	// the answer, de-duplicated.
	shared := gres("S", "c", "m")
	o0.results = []find.ProviderResult{shared}
	o1.results = []find.ProviderResult{shared, gres("P1", "c", "m")}
	o1.delay = 50 * time.Millisecond
	if got, err = lookup(); err != nil || !slices.Equal(got, []string{"P1/c=m", "S/c=m"}) {
		t.Errorf("leader failing midway: %q, %v; want [P1/c=m S/c=m] and no error", got, err)
	}

	// Only when every owner fails is the answer partial.
	o1.err = errGatherBoom
	o1.results = nil
	_, err = lookup()
	checkPartialErr(t, err, &find.PartialError{Answered: 0, Total: 2}, errGatherBoom)
	if !strings.Contains(err.Error(), names[owners[0]]) || !strings.Contains(err.Error(), names[owners[1]]) {
		t.Errorf("error %q does not name the backends", err)
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

// With a hedge, the primary is asked alone; the next owner when the hedge
// delay passes without a complete answer, or at once when the primary
// fails; every owner failing is still partial.
func TestGatherRingHedge(t *testing.T) {
	fakes := make([]*gatherFake, 4)
	names := make([]string, len(fakes))
	for i := range fakes {
		fakes[i] = &gatherFake{results: []find.ProviderResult{gres(fmt.Sprint("P", i), "c", "m")}}
		names[i] = fmt.Sprintf("indexer-%d", i)
	}
	ring, err := NewRing(names, 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	const hedge = 300 * time.Millisecond
	g, err := NewGather(gatherBackends(fakes...), WithRing(ring), WithHedge(hedge),
		WithBreaker(BreakerConfig{Disabled: true}))
	if err != nil {
		t.Fatal(err)
	}
	owners := ring.Owners(gatherMH)
	o0, o1 := fakes[owners[0]], fakes[owners[1]]
	lookup := func() ([]string, error, time.Duration) {
		t.Helper()
		for _, f := range fakes {
			f.calls.Store(0)
		}
		start := time.Now()
		got, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
		return got, err, time.Since(start)
	}
	primary, second := fmt.Sprintf("P%d/c=m", owners[0]), fmt.Sprintf("P%d/c=m", owners[1])

	got, err, _ := lookup()
	if err != nil || !slices.Equal(got, []string{primary}) || o1.calls.Load() != 0 {
		t.Errorf("fast primary: %q, %v, second owner asked %d times; want the primary's answer alone", got, err, o1.calls.Load())
	}

	o0.delay = 10 * time.Second
	got, err, d := lookup()
	if err != nil || !slices.Equal(got, []string{second}) || d < hedge || d > 5*time.Second {
		t.Errorf("slow primary: %q, %v after %v; want the second owner's answer after the hedge delay", got, err, d)
	}

	o0.delay, o0.err, o0.results = 0, errGatherBoom, nil
	got, err, d = lookup()
	if err != nil || !slices.Equal(got, []string{second}) || d >= hedge {
		t.Errorf("failing primary: %q, %v after %v; want the second owner's answer at once", got, err, d)
	}

	o1.err, o1.results = errGatherBoom, nil
	_, err, _ = lookup()
	checkPartialErr(t, err, &find.PartialError{Answered: 0, Total: 2}, errGatherBoom)

	if _, err := NewGather(gatherBackends(fakes...), WithHedge(0)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("WithHedge(0): %v", err)
	}
}
