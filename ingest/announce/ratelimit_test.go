package announce_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/announce"
)

// putFrom PUTs body to url from the loopback address from (the whole
// 127.0.0.0/8 is loopback on Linux), with the header hdr, and returns the
// status and the Retry-After header.
func putFrom(t *testing.T, from, url string, body []byte, hdr http.Header) (int, string) {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// queued drains the receiver and returns the CIDs it had queued, as
// strings.
func queued(t *testing.T, r *announce.Receiver) []string {
	t.Helper()
	var got []string
	for r.Stats().Queued > 0 {
		got = append(got, next(t, r).Cid.String())
	}
	return got
}

func TestReceiverSourceRate(t *testing.T) {
	// A token per 1000s: none comes back during the test.
	const burst = 3
	r, srv := newReceiver(t, announce.WithSourceRate(0.001, burst))
	p := newPeer(t)
	var want []string
	send := func(from, seed string, hdr http.Header) (int, string) {
		t.Helper()
		m := httpMessage(t, p, seed)
		code, retry := putFrom(t, from, srv.URL+"/announce", encode(t, m, false), hdr)
		if code == http.StatusNoContent {
			want = append(want, m.Cid.String())
		}
		return code, retry
	}
	for i := range burst {
		if code, _ := send("127.0.0.1", "a-"+strconv.Itoa(i), nil); code != http.StatusNoContent {
			t.Fatalf("announce %d of the burst: status %d", i, code)
		}
	}
	code, retry := send("127.0.0.1", "a-over", nil)
	if code != http.StatusTooManyRequests {
		t.Fatalf("announce over the rate: status %d, want 429", code)
	}
	if s, err := strconv.Atoi(retry); err != nil || s < 1 || s > 1000 {
		t.Errorf("Retry-After %q, want 1 to 1000 seconds", retry)
	}
	// Another source has its own budget.
	if code, _ := send("127.0.0.2", "b-0", nil); code != http.StatusNoContent {
		t.Errorf("announce from another source: status %d", code)
	}
	// X-Forwarded-For is not trusted without the option.
	if code, _ := send("127.0.0.1", "a-xff", http.Header{"X-Forwarded-For": {"198.51.100.1"}}); code != http.StatusTooManyRequests {
		t.Errorf("announce with X-Forwarded-For: status %d, want 429", code)
	}
	if got := queued(t, r); !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q: the refused ones must not be", got, want)
	}
	if s := r.Stats(); s.RateLimited != 2 || s.Accepted != burst+1 || s.Sources != 2 {
		t.Errorf("stats %+v, want 2 rate-limited, %d accepted, 2 sources", s, burst+1)
	}
}

func TestReceiverTrustForwardedFor(t *testing.T) {
	r, srv := newReceiver(t, announce.WithSourceRate(0.001, 1), announce.WithTrustForwardedFor(true))
	p := newPeer(t)
	send := func(seed string, xff ...string) int {
		t.Helper()
		var hdr http.Header
		if len(xff) > 0 {
			hdr = http.Header{"X-Forwarded-For": xff}
		}
		code, _ := putFrom(t, "127.0.0.1", srv.URL+"/announce", encode(t, httpMessage(t, p, seed), false), hdr)
		return code
	}
	// The source is the last address: the one the proxy appended.
	for i, tc := range []struct {
		xff  []string
		want int
	}{
		{[]string{"203.0.113.9, 198.51.100.1"}, http.StatusNoContent},
		{[]string{"203.0.113.10, 198.51.100.1"}, http.StatusTooManyRequests},
		{[]string{"198.51.100.1", "198.51.100.2"}, http.StatusNoContent},
		{[]string{"[2001:db8:1:2::1]"}, http.StatusNoContent}, // not an address: the remote one
		{[]string{"2001:db8:1:2::1"}, http.StatusNoContent},
		{[]string{"2001:db8:1:2::99"}, http.StatusTooManyRequests}, // the same /64
		{nil, http.StatusTooManyRequests},                          // 127.0.0.1, as with the bad address above
	} {
		if code := send("x-"+strconv.Itoa(i), tc.xff...); code != tc.want {
			t.Errorf("X-Forwarded-For %q: status %d, want %d", tc.xff, code, tc.want)
		}
	}
	if s := r.Stats(); s.Accepted != 4 || s.RateLimited != 3 {
		t.Errorf("stats %+v, want 4 accepted, 3 rate-limited", s)
	}
}

func TestReceiverSourceRateExempt(t *testing.T) {
	r, srv := newReceiver(t, announce.WithSourceRate(0.001, 1),
		announce.WithSourceRateExempt(netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("10.0.0.0/8")))
	p := newPeer(t)
	send := func(from, seed string) int {
		t.Helper()
		code, _ := putFrom(t, from, srv.URL+"/announce", encode(t, httpMessage(t, p, seed), false), nil)
		return code
	}
	for i := range 5 {
		if code := send("127.0.0.2", "exempt-"+strconv.Itoa(i)); code != http.StatusNoContent {
			t.Fatalf("announce %d from an exempt source: status %d", i, code)
		}
	}
	if code := send("127.0.0.1", "limited-0"); code != http.StatusNoContent {
		t.Fatalf("first announce from 127.0.0.1: status %d", code)
	}
	if code := send("127.0.0.1", "limited-1"); code != http.StatusTooManyRequests {
		t.Errorf("second announce from 127.0.0.1: status %d, want 429", code)
	}
	if s := r.Stats(); s.Accepted != 6 || s.RateLimited != 1 || s.Sources != 1 {
		t.Errorf("stats %+v, want 6 accepted, 1 rate-limited, 1 source remembered", s)
	}
	if _, err := announce.NewReceiver(announce.WithSourceRateExempt(netip.Prefix{})); !errors.Is(err, announce.ErrInvalidOption) {
		t.Errorf("an invalid prefix: %v, want ErrInvalidOption", err)
	}
}

func TestReceiverSourceRateBounded(t *testing.T) {
	// 1e5 sources, each within its rate, against a table of 1000: the
	// table stays at its bound, and the recent sources are still limited.
	const sources, max = 100_000, 1000
	r, err := announce.NewReceiver(announce.WithSourceRate(0.001, 1), announce.WithMaxSources(max))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	addr := func(i int) string {
		return "10." + strconv.Itoa(i>>16) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":4000"
	}
	serve := func(i int) int {
		// An empty body: the rate is checked before the body is read
		// (400 here), so no announce is queued.
		req := httptest.NewRequest(http.MethodPut, "/announce", nil)
		req.RemoteAddr = addr(i)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w.Code
	}
	for i := range sources {
		if code := serve(i); code != http.StatusBadRequest {
			t.Fatalf("source %d: status %d, want 400 (past the rate limit)", i, code)
		}
	}
	if s := r.Stats(); s.Sources != max || s.RateLimited != 0 {
		t.Errorf("stats %+v, want %d sources, none rate-limited", s, max)
	}
	if code := serve(sources - 1); code != http.StatusTooManyRequests {
		t.Errorf("a recent source again: status %d, want 429", code)
	}
}

func TestReceiverSourceRateOptions(t *testing.T) {
	for _, o := range []announce.Option{
		announce.WithSourceRate(-1, 1), announce.WithSourceRate(1, 0), announce.WithMaxSources(0),
	} {
		if _, err := announce.NewReceiver(o); !errors.Is(err, announce.ErrInvalidOption) {
			t.Errorf("got %v, want ErrInvalidOption", err)
		}
	}
	// 0 is no limit.
	r, srv := newReceiver(t, announce.WithSourceRate(0, 0))
	p := newPeer(t)
	for i := range 50 {
		if code, body := put(t, srv.URL+"/announce", "", encode(t, httpMessage(t, p, "n-"+strconv.Itoa(i)), false)); code != http.StatusNoContent {
			t.Fatalf("announce %d without a limit: %d %s", i, code, body)
		}
	}
	if s := r.Stats(); s.RateLimited != 0 || s.Sources != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestGossipPeerRate(t *testing.T) {
	// An indexer connected to two publishers that are not connected to
	// each other: each announce comes straight from its publisher.
	const burst = 2
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	idx := newHost(t)
	recv, err := announce.NewReceiver()
	if err != nil {
		t.Fatal(err)
	}
	g, err := announce.NewGossip(idx, recv, announce.WithNetwork("testnet"), announce.WithPeerRate(0.001, burst))
	if err != nil {
		t.Fatal(err)
	}
	pubs := []host2{{h: newHost(t)}, {h: newHost(t)}}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		recv.Close()
		idx.Close()
		for _, p := range pubs {
			p.h.Close()
		}
	})
	wg.Go(func() {
		if err := g.Run(ctx); err != nil {
			t.Errorf("indexer Run: %v", err)
		}
	})
	for i := range pubs {
		if pubs[i].g, err = announce.NewGossip(pubs[i].h, nil, announce.WithNetwork("testnet")); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := pubs[i].g.Run(ctx); err != nil {
				t.Errorf("publisher %d Run: %v", i, err)
			}
		})
		connect(t, pubs[i].h, idx)
	}
	waitGossip(t, "every peer on the topic", func() bool {
		for _, p := range pubs {
			if !slices.Contains(g.Peers(), p.h.ID()) || !slices.Contains(p.g.Peers(), idx.ID()) {
				return false
			}
		}
		return true
	})

	send := func(p host2, seed string) {
		t.Helper()
		m := announce.Message{Cid: testCID(t, seed), Addrs: mustAddrs(t, "/ip4/127.0.0.1/tcp/3104/http")}
		if err := p.g.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range burst + 2 {
		send(pubs[0], "p0-"+strconv.Itoa(i))
	}
	send(pubs[1], "p1-0")
	waitGossip(t, "every message read", func() bool { return g.Stats().Received == burst+3 })
	if s := g.Stats(); s.RateLimited != 2 {
		t.Errorf("gossip stats %+v, want 2 rate-limited", s)
	}
	var from []peer.ID
	for recv.Stats().Queued > 0 {
		from = append(from, next(t, recv).Publisher)
	}
	slices.Sort(from)
	want := []peer.ID{pubs[0].h.ID(), pubs[0].h.ID(), pubs[1].h.ID()}
	slices.Sort(want)
	if !slices.Equal(from, want) {
		t.Errorf("delivered from %v, want %v: %d from the first publisher, 1 from the second", from, want, burst)
	}
	if _, err := announce.NewGossip(idx, nil, announce.WithPeerRate(1, 0)); !errors.Is(err, announce.ErrInvalidOption) {
		t.Errorf("WithPeerRate(1, 0): %v, want ErrInvalidOption", err)
	}
}

// host2 is a send-only gossip node.
type host2 struct {
	h host.Host
	g *announce.Gossip
}

func waitGossip(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
