package announce_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/indexkit/indexkit/ingest/announce"
)

// serve runs one PUT /announce of body from remote straight through r.
func serve(r *announce.Receiver, remote string, body []byte) int {
	req := httptest.NewRequest(http.MethodPut, "/announce", bytes.NewReader(body))
	req.RemoteAddr = remote
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w.Code
}

// TestReceiverBodyLimitEdge: a body of exactly WithBodyLimit bytes is
// read and delivered, one byte more is 413 and delivers nothing.
func TestReceiverBodyLimitEdge(t *testing.T) {
	p := newPeer(t)
	body := encode(t, httpMessage(t, p, "edge"), false)
	n := int64(len(body))
	at, err := announce.NewReceiver(announce.WithBodyLimit(n))
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	if code := serve(at, "127.0.0.1:1", body); code != http.StatusNoContent {
		t.Fatalf("a body of %d bytes under a limit of %d: status %d, want 204", n, n, code)
	}
	if s := at.Stats(); s.Accepted != 1 || s.Malformed != 0 {
		t.Errorf("limit %d: stats %+v, want 1 accepted", n, s)
	}

	under, err := announce.NewReceiver(announce.WithBodyLimit(n - 1))
	if err != nil {
		t.Fatal(err)
	}
	defer under.Close()
	if code := serve(under, "127.0.0.1:1", body); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body of %d bytes under a limit of %d: status %d, want 413", n, n-1, code)
	}
	if s := under.Stats(); s.Accepted != 0 || s.Malformed != 1 || s.Queued != 0 {
		t.Errorf("limit %d: stats %+v, want nothing accepted, 1 malformed", n-1, s)
	}
}

// TestReceiverSourceRateExemptNearMisses: each exempt prefix exempts its
// first and last address and no neighbour, in plain and IPv4-mapped
// form; a prefix written IPv4-mapped stands for its IPv4 form.
func TestReceiverSourceRateExemptNearMisses(t *testing.T) {
	r, err := announce.NewReceiver(announce.WithSourceRate(0.001, 1), announce.WithSourceRateExempt(
		netip.MustParsePrefix("127.0.0.2/32"),
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("2001:db8::/64"),
		netip.MustParsePrefix("::ffff:192.168.7.0/120"), // 192.168.7.0/24
	))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, tc := range []struct {
		remote string
		exempt bool
	}{
		{"127.0.0.2:1", true},
		{"[::ffff:127.0.0.2]:1", true},
		{"127.0.0.1:1", false},
		{"127.0.0.3:1", false},
		{"10.0.0.0:1", true},
		{"10.255.255.255:1", true},
		{"[::ffff:10.255.255.255]:1", true},
		{"9.255.255.255:1", false},
		{"11.0.0.0:1", false},
		{"[2001:db8::]:1", true},
		{"[2001:db8::ffff:ffff:ffff:ffff]:1", true},
		{"[2001:db8::1%eth0]:1", true},
		{"[2001:db8:0:1::]:1", false},
		{"[2001:db7:ffff:ffff:ffff:ffff:ffff:ffff]:1", false},
		{"192.168.7.0:1", true},
		{"192.168.7.255:1", true},
		{"192.168.6.255:1", false},
		{"192.168.8.0:1", false},
		{"not-an-address", false},
	} {
		// Empty bodies: the rate is checked before the body is read, so
		// a source within its rate gets 400, one over it 429. Each row
		// is a source of its own, and the one token of a limited source
		// goes to the first request.
		first, second := serve(r, tc.remote, nil), serve(r, tc.remote, nil)
		exempt := first == http.StatusBadRequest && second == http.StatusBadRequest
		limited := first == http.StatusBadRequest && second == http.StatusTooManyRequests
		if tc.exempt && !exempt || !tc.exempt && !limited {
			t.Errorf("row %d, source %s: statuses %d then %d, want exempt %v", i, tc.remote, first, second, tc.exempt)
		}
	}
	if s := r.Stats(); s.RateLimited != 9 {
		t.Errorf("stats %+v, want 9 rate-limited", s)
	}
}
