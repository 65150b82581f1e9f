package announce_test

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/announce"
)

// tableSink is a Sink whose classes are a table, which takes every
// announce unless refuse is set, and which records what it took.
type tableSink struct {
	mu     sync.Mutex
	class  map[peer.ID]announce.Class
	refuse error
	took   []announce.Announce
}

func (s *tableSink) Class(p peer.ID) announce.Class {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.class[p]
}

func (s *tableSink) Take(a announce.Announce) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse != nil {
		return s.refuse
	}
	s.took = append(s.took, a)
	return nil
}

func (s *tableSink) taken() []announce.Announce {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]announce.Announce(nil), s.took...)
}

// TestSinkLimitsByClass: with a Sink, an announce of a publisher with a
// walk pending passes whatever its source has used, a verified one counts
// against its publisher only, and a new one against its source.
func TestSinkLimitsByClass(t *testing.T) {
	pending, verified, verified2, fresh := newPeer(t), newPeer(t), newPeer(t), newPeer(t)
	sink := &tableSink{class: map[peer.ID]announce.Class{
		pending: announce.ClassPending, verified: announce.ClassVerified, verified2: announce.ClassVerified,
	}}
	// A token per 1000 s: none comes back during the test.
	r, srv := newReceiver(t, announce.WithSink(sink), announce.WithSourceRate(0.001, 2), announce.WithPublisherRate(0.001, 3))
	send := func(p peer.ID, seed string) (int, string) {
		t.Helper()
		return putFrom(t, "127.0.0.1", srv.URL+"/announce", encode(t, httpMessage(t, p, seed), false), nil)
	}
	// The source's two tokens go to the new publisher.
	for i := range 2 {
		if code, _ := send(fresh, "n"+strconv.Itoa(i)); code != http.StatusNoContent {
			t.Fatalf("new publisher, announce %d: status %d, want 204", i, code)
		}
	}
	if code, retry := send(fresh, "n-over"); code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("new publisher over its source's rate: status %d, Retry-After %q; want 429 with Retry-After", code, retry)
	}
	// The source is spent, but a publisher with a walk pending is not
	// limited at all ...
	for i := range 50 {
		if code, _ := send(pending, "p"+strconv.Itoa(i)); code != http.StatusNoContent {
			t.Fatalf("pending publisher, announce %d from a spent source: status %d, want 204", i, code)
		}
	}
	// ... and a verified one has its own budget, apart from its neighbour.
	for i := range 3 {
		if code, _ := send(verified, "v"+strconv.Itoa(i)); code != http.StatusNoContent {
			t.Fatalf("verified publisher, announce %d: status %d, want 204", i, code)
		}
	}
	if code, retry := send(verified, "v-over"); code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("verified publisher over its rate: status %d, Retry-After %q; want 429 with Retry-After", code, retry)
	}
	if code, _ := send(verified2, "w"); code != http.StatusNoContent {
		t.Fatalf("another verified publisher from the same source: status %d, want 204", code)
	}
	s := r.Stats()
	if s.Coalesced != 50 || s.RateLimited != 1 || s.PublisherLimited != 1 || s.Accepted != 56 {
		t.Errorf("stats %+v, want Coalesced 50, RateLimited 1, PublisherLimited 1, Accepted 56", s)
	}
	took := sink.taken()
	if len(took) != 56 {
		t.Fatalf("sink took %d announces, want 56", len(took))
	}
	if a := took[0]; a.From != netip.MustParseAddr("127.0.0.1") || a.Trusted || a.Source != announce.SourceHTTP || a.Publisher != fresh {
		t.Errorf("first announce taken: %+v, want From 127.0.0.1, not trusted, over HTTP, of the new publisher", a)
	}
	if q := r.Stats().Queued; q != 0 {
		t.Errorf("%d announces queued for Next with a Sink, want 0", q)
	}
}

// TestSinkRefusal: an announce the Sink refuses is answered 429 or 503
// with a Retry-After, never 204, and is not taken for a repeat later.
func TestSinkRefusal(t *testing.T) {
	p := newPeer(t)
	sink := &tableSink{}
	r, srv := newReceiver(t, announce.WithSink(sink))
	body := encode(t, httpMessage(t, p, "x"), false)
	for _, tc := range []struct {
		refusal *announce.Refusal
		code    int
		retry   string
	}{
		{&announce.Refusal{Reason: "your share of the queue is used", RetryAfter: 3 * time.Second, Source: true}, http.StatusTooManyRequests, "3"},
		{&announce.Refusal{Reason: "full", RetryAfter: 10 * time.Millisecond}, http.StatusServiceUnavailable, "1"},
	} {
		sink.mu.Lock()
		sink.refuse = tc.refusal
		sink.mu.Unlock()
		code, retry := putFrom(t, "127.0.0.1", srv.URL+"/announce", body, nil)
		if code != tc.code || retry != tc.retry {
			t.Errorf("refused with %+v: status %d, Retry-After %q; want %d, %q", tc.refusal, code, retry, tc.code, tc.retry)
		}
	}
	sink.mu.Lock()
	sink.refuse = nil
	sink.mu.Unlock()
	if code, _ := putFrom(t, "127.0.0.1", srv.URL+"/announce", body, nil); code != http.StatusNoContent {
		t.Fatalf("the same announce once the sink takes it again: status %d, want 204", code)
	}
	if n := len(sink.taken()); n != 1 {
		t.Errorf("sink took %d announces, want 1: a refused announce was remembered as seen", n)
	}
	if s := r.Stats(); s.Refused != 2 || s.Accepted != 1 {
		t.Errorf("stats %+v, want Refused 2, Accepted 1", s)
	}
}

func TestPublisherRateNeedsSink(t *testing.T) {
	if _, err := announce.NewReceiver(announce.WithPublisherRate(1, 1)); err == nil {
		t.Fatal("WithPublisherRate without WithSink: no error")
	}
}
