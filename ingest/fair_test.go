package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/internal/testbed/netproxy"
	"github.com/indexkit/indexkit/store/memory"
)

func TestSourceOf(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.77":        "203.0.113.0/24",
		"::ffff:203.0.113.77": "203.0.113.0/24",
		"2001:db8:1:2:3::4":   "2001:db8:1::/48",
		"fe80::1%eth0":        "fe80::/48",
		"127.0.0.1":           "127.0.0.0/24",
	} {
		if got := ingest.SourceOf(netip.MustParseAddr(in)); got != want {
			t.Errorf("SourceOf(%s) = %q, want %q", in, got, want)
		}
	}
	if got := ingest.SourceOf(netip.Addr{}); got != "" {
		t.Errorf("SourceOf(invalid) = %q, want empty", got)
	}
}

// A full table of publishers that never verified: a source holding its
// fair share is refused, one under it takes the place of the largest
// source's newest publisher, and a trusted caller is not refused for a
// source's sake.
func TestUnverifiedFairShare(t *testing.T) {
	dead := []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/1/http")}
	ing := newHTTPIngester(t, memory.New(), newDS(), ingest.WithUnverifiedLimit(8, time.Hour))
	// Run is not running: every publisher waits for its check.
	var flood []string
	for n := range 8 {
		id := peerID(t, fmt.Sprintf("flood-%d", n))
		flood = append(flood, id.String())
		if err := ing.AnnounceFrom("198.51.100.0/24", id, dead, cid.Undef); err != nil {
			t.Fatalf("flood publisher %d while there is room: %v", n, err)
		}
	}
	err := ing.AnnounceFrom("198.51.100.0/24", peerID(t, "flood-8"), dead, cid.Undef)
	if !errors.Is(err, ingest.ErrTooManyPublishers) {
		t.Fatalf("the flood's source over its share of a full table: %v, want ErrTooManyPublishers", err)
	}
	// Another source takes a place: one of the flood's is forgotten.
	for n := range 4 {
		if err := ing.AnnounceFrom("203.0.113.0/24", peerID(t, fmt.Sprintf("honest-%d", n)), dead, cid.Undef); err != nil {
			t.Fatalf("honest publisher %d from a source under its share: %v", n, err)
		}
	}
	// Shares are now 4 and 4: the honest source is at its share.
	if err := ing.AnnounceFrom("203.0.113.0/24", peerID(t, "honest-4"), dead, cid.Undef); !errors.Is(err, ingest.ErrTooManyPublishers) {
		t.Fatalf("honest source over an equal share: %v, want ErrTooManyPublishers", err)
	}
	held := map[bool]int{}
	for _, st := range ing.Statuses() {
		held[len(st.Publisher.String()) > 0 && contains(flood, st.Publisher.String())]++
	}
	if held[true] != 4 || held[false] != 4 {
		t.Fatalf("held %d of the flood's and %d others, want 4 and 4", held[true], held[false])
	}
	// A trusted caller (source "") is not refused: the largest source
	// makes room.
	if err := ing.Announce(peerID(t, "operator"), dead, cid.Undef); err != nil {
		t.Fatalf("trusted announce into a full table: %v", err)
	}
	if n := len(ing.Statuses()); n != 8 {
		t.Fatalf("%d publishers held, want the limit, 8", n)
	}
	if s := ing.Unverified(); s.Held != 8 || s.Refused != 2 || s.Evicted != 5 {
		t.Errorf("Unverified() = %+v, want Held 8, Refused 2, Evicted 5", s)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// tarpitAddr listens on 127.0.0.1, accepts and never answers, until the
// test ends.
func tarpitAddr(t *testing.T) multiaddr.Multiaddr {
	t.Helper()
	tp, err := netproxy.ListenTarpit()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", tp.Addr().Port))
}

// Head checks of publishers that never verified: announced addresses
// that accept and never answer fail after the head check deadline, not
// the request timeout; the checks run apart from the walk workers, shared
// among sources, so that a publisher from a source that did not fail is
// checked and walked while a flood from other sources waits.
func TestHeadChecksShareWorkers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pit := []multiaddr.Multiaddr{tarpitAddr(t)}
	chain := generate(t, chaingen.Config{Seed: 27, Ads: 3, MhsPerAd: 4})
	good, _ := serveChain(t, chain, nil, cid.Undef, nil)
	st := memory.New()
	defer st.Close()
	ing := newHTTPIngester(t, st, newDS(), ingest.WithHeadCheckTimeout(300*time.Millisecond),
		ingest.WithCheckWorkers(4), ingest.WithRequestTimeout(time.Minute), ingest.WithBackoff(time.Hour, time.Hour))
	for s := range 10 {
		for n := range 10 {
			if err := ing.AnnounceFrom(fmt.Sprintf("10.0.%d.0/24", s), peerID(t, fmt.Sprintf("pit-%d-%d", s, n)), pit, cid.Undef); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	time.Sleep(400 * time.Millisecond) // the first checks end, failed
	start := time.Now()
	if err := ing.AnnounceFrom("192.0.2.0/24", chain.Publisher, []multiaddr.Multiaddr{good}, cid.Undef); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the honest publisher's walk", func() bool {
		s, ok := ing.Status(chain.Publisher)
		return ok && s.LastHead.Equals(chain.Head())
	})
	// 100 checks of 300 ms over 4 workers take 7.5 s in the queue's order;
	// the honest one is due at the next free worker.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the honest publisher was walked %v after its announce, behind the flood", took)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var failed int
	for _, s := range ing.Statuses() {
		if s.LastError == nil {
			continue
		}
		failed++
		if !errors.Is(s.LastError, context.DeadlineExceeded) {
			t.Errorf("a tarpit check failed with %v, want its deadline", s.LastError)
		}
	}
	if failed == 0 {
		t.Error("no tarpit check ended")
	}
}

// Sink: an announce's class follows the publisher's state.
func TestSinkClass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chain := generate(t, chaingen.Config{Seed: 28, Ads: 2, MhsPerAd: 3})
	good, _ := serveChain(t, chain, nil, cid.Undef, nil)
	st := memory.New()
	defer st.Close()
	ing := newHTTPIngester(t, st, newDS())
	sink := ing.Sink(nil)
	if c := sink.Class(chain.Publisher); c != announce.ClassNew {
		t.Fatalf("class of an unknown publisher: %v, want new", c)
	}
	a := announce.Announce{Cid: chain.Head(), Publisher: chain.Publisher, Addrs: []multiaddr.Multiaddr{good},
		Source: announce.SourceHTTP, From: netip.MustParseAddr("192.0.2.9")}
	if err := sink.Take(a); err != nil {
		t.Fatal(err)
	}
	if c := sink.Class(chain.Publisher); c != announce.ClassPending {
		t.Fatalf("class of a queued publisher: %v, want pending", c)
	}
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	waitFor(t, "the walk", func() bool {
		s, ok := ing.Status(chain.Publisher)
		return ok && s.LastHead.Equals(chain.Head()) && !s.Walking && !s.Announced.Defined()
	})
	if c := sink.Class(chain.Publisher); c != announce.ClassVerified {
		t.Fatalf("class of a verified, idle publisher: %v, want verified", c)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// countingHandler counts the records at each level.
type countingHandler struct {
	mu sync.Mutex
	n  map[slog.Level]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.n[r.Level]++
	h.mu.Unlock()
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[l]
}

// Publishers that never verify, which anyone can announce, do not flood
// the log: their failures are counted, and logged at warning level once
// per kind and interval.
func TestUnverifiedFailuresLoggedSampled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dead := []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/1/http")} // refused at once
	h := &countingHandler{n: map[slog.Level]int{}}
	ing := newHTTPIngester(t, memory.New(), newDS(), ingest.WithLogger(slog.New(h)))
	const n = 200
	for k := range n {
		if err := ing.AnnounceFrom("198.51.100.0/24", peerID(t, fmt.Sprintf("nobody-%d", k)), dead, cid.Undef); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	waitFor(t, "every check to fail", func() bool { return ing.Unverified().Failed == n })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w := h.count(slog.LevelWarn); w > 4 {
		t.Errorf("%d warnings for %d publishers that never verified, want a sample (at most 4)", w, n)
	}
	if i := h.count(slog.LevelInfo); i > 4 {
		t.Errorf("%d info lines for %d publishers that never verified, want a few", i, n)
	}
}
