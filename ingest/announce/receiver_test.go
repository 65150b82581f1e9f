package announce_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/libp2p/go-libp2p/core/peer"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 10 * time.Second

func newTestServer(h http.Handler) *httptest.Server { return httptest.NewServer(h) }

func newReceiver(t *testing.T, opts ...announce.Option) (*announce.Receiver, *httptest.Server) {
	t.Helper()
	r, err := announce.NewReceiver(opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(func() {
		srv.Close()
		r.Close()
	})
	return r, srv
}

func put(t *testing.T, url, ctype string, body []byte) (int, string) {
	t.Helper()
	return do(t, http.MethodPut, url, ctype, body)
}

func do(t *testing.T, method, url, ctype string, body []byte) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func next(t *testing.T, r *announce.Receiver) announce.Announce {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	a, err := r.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return a
}

// noNext checks that nothing is queued.
func noNext(t *testing.T, r *announce.Receiver) {
	t.Helper()
	if q := r.Stats().Queued; q != 0 {
		a := next(t, r)
		t.Fatalf("unexpected announce %+v", a)
	}
}

func httpMessage(t *testing.T, p peer.ID, seed string) announce.Message {
	return announce.Message{
		Cid:       testCID(t, seed),
		Addrs:     mustAddrs(t, "/ip4/127.0.0.1/tcp/3104/http/p2p/"+p.String(), "/dns4/pub.example/tcp/443/https/p2p/"+p.String()),
		ExtraData: []byte("f01234"),
	}
}

func encode(t *testing.T, m announce.Message, js bool) []byte {
	t.Helper()
	var b []byte
	var err error
	if js {
		b, err = m.EncodeJSON()
	} else {
		b, err = m.EncodeCBOR()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReceiverAccepts(t *testing.T) {
	r, srv := newReceiver(t)
	p := newPeer(t)
	for i, tt := range []struct {
		path, ctype string
		js          bool
	}{
		{"/announce", "", false},
		{"/announce", "application/octet-stream", false},
		{"/ingest/announce", "application/cbor", false},
		{"/announce", "application/json", true},
		{"/ingest/announce", "application/json; charset=utf-8", true},
	} {
		m := httpMessage(t, p, "ad-"+string(rune('a'+i)))
		code, body := put(t, srv.URL+tt.path, tt.ctype, encode(t, m, tt.js))
		if code != http.StatusNoContent {
			t.Fatalf("%+v: %d %s", tt, code, body)
		}
		a := next(t, r)
		if !a.Cid.Equals(m.Cid) || a.Publisher != p || a.Source != announce.SourceHTTP || a.Relay != "" ||
			string(a.ExtraData) != "f01234" || len(a.Addrs) != 2 || a.Addrs[0].String() != "/ip4/127.0.0.1/tcp/3104/http" {
			t.Fatalf("%+v: got %+v", tt, a)
		}
	}
	if s := r.Stats(); s.Accepted != 5 || s.HTTP != 5 || s.Queued != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestReceiverRejects(t *testing.T) {
	p, q := newPeer(t), newPeer(t)
	denied := newPeer(t)
	r, srv := newReceiver(t, announce.WithBodyLimit(512),
		announce.WithAllow(func(id peer.ID) bool { return id != denied }))
	good := encode(t, httpMessage(t, p, "x"), false)
	noAddrs := encode(t, announce.Message{Cid: testCID(t, "x")}, false)
	noP2P := encode(t, announce.Message{Cid: testCID(t, "x"), Addrs: mustAddrs(t, "/ip4/127.0.0.1/tcp/1/http")}, false)
	twoPeers := encode(t, announce.Message{Cid: testCID(t, "x"), Addrs: mustAddrs(t,
		"/ip4/127.0.0.1/tcp/1/p2p/"+p.String(), "/ip4/127.0.0.1/tcp/2/p2p/"+q.String())}, false)
	tests := []struct {
		name, method, path, ctype string
		body                      []byte
		code                      int
		words                     string
	}{
		{"garbage", "PUT", "/announce", "", []byte("hello"), 400, "malformed"},
		{"json as cbor", "PUT", "/announce", "", encode(t, httpMessage(t, p, "x"), true), 400, "malformed"},
		{"cbor as json", "PUT", "/announce", "application/json", good, 400, "JSON"},
		{"empty body", "PUT", "/announce", "", nil, 400, "unexpected end"},
		{"no addrs", "PUT", "/announce", "", noAddrs, 400, "no addresses"},
		{"no p2p", "PUT", "/announce", "", noP2P, 400, "no /p2p/"},
		{"two peers", "PUT", "/announce", "", twoPeers, 400, "several publisher"},
		{"too big", "PUT", "/announce", "", make([]byte, 513), 413, "over 512"},
		{"denied", "PUT", "/announce", "", encode(t, httpMessage(t, denied, "x"), false), 403, denied.String()},
		{"GET", "GET", "/announce", "", nil, 405, "method"},
		{"POST", "POST", "/ingest/announce", "", good, 405, "method"},
		{"other path", "PUT", "/announce/x", "", good, 404, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, tt.method, srv.URL+tt.path, tt.ctype, tt.body)
			if code != tt.code || !strings.Contains(body, tt.words) {
				t.Fatalf("got %d %q; want %d saying %q", code, body, tt.code, tt.words)
			}
		})
	}
	noNext(t, r)
	if s := r.Stats(); s.Malformed != 8 || s.Denied != 1 || s.Accepted != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestReceiverDedupe(t *testing.T) {
	r, srv := newReceiver(t, announce.WithDedupeSize(2))
	p, q := newPeer(t), newPeer(t)
	send := func(pub peer.ID, seed string) {
		t.Helper()
		if code, body := put(t, srv.URL+"/announce", "", encode(t, httpMessage(t, pub, seed), false)); code != 204 {
			t.Fatalf("%d %s", code, body)
		}
	}
	send(p, "a")
	send(p, "a") // repeat: dropped
	send(q, "a") // same CID, other publisher: kept
	if a := next(t, r); a.Publisher != p {
		t.Fatalf("got %+v", a)
	}
	if a := next(t, r); a.Publisher != q {
		t.Fatalf("got %+v", a)
	}
	noNext(t, r)
	send(p, "b") // evicts (p, a)
	send(p, "a") // accepted again
	next(t, r)
	if a := next(t, r); !a.Cid.Equals(testCID(t, "a")) {
		t.Fatalf("got %+v", a)
	}
	r.Forget(p, testCID(t, "a"))
	send(p, "a")
	next(t, r)
	if s := r.Stats(); s.Duplicates != 1 || s.Accepted != 5 {
		t.Fatalf("stats %+v", s)
	}
}

func TestReceiverQueueFull(t *testing.T) {
	r, srv := newReceiver(t, announce.WithQueueSize(1))
	p := newPeer(t)
	body := encode(t, httpMessage(t, p, "a"), false)
	if code, _ := put(t, srv.URL+"/announce", "", encode(t, httpMessage(t, p, "first"), false)); code != 204 {
		t.Fatal(code)
	}
	if code, msg := put(t, srv.URL+"/announce", "", body); code != 503 || !strings.Contains(msg, "queue full") {
		t.Fatalf("%d %s", code, msg)
	}
	next(t, r)
	// The dropped announce was forgotten, so its resend is accepted.
	if code, _ := put(t, srv.URL+"/announce", "", body); code != 204 {
		t.Fatal(code)
	}
	if a := next(t, r); !a.Cid.Equals(testCID(t, "a")) {
		t.Fatalf("got %+v", a)
	}
	if s := r.Stats(); s.Dropped != 1 || s.Accepted != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestReceiverFilterIPs(t *testing.T) {
	r, srv := newReceiver(t, announce.WithFilterIPs(true))
	p := newPeer(t)
	m := announce.Message{Cid: testCID(t, "a"), Addrs: mustAddrs(t,
		"/ip4/127.0.0.1/tcp/1/p2p/"+p.String(), "/ip4/10.1.2.3/tcp/1/p2p/"+p.String(),
		"/ip4/8.8.8.8/tcp/1/http/p2p/"+p.String(), "/dns4/pub.example/tcp/443/https/p2p/"+p.String())}
	if code, body := put(t, srv.URL+"/announce", "", encode(t, m, false)); code != 204 {
		t.Fatalf("%d %s", code, body)
	}
	a := next(t, r)
	if len(a.Addrs) != 2 || a.Addrs[0].String() != "/ip4/8.8.8.8/tcp/1/http" {
		t.Fatalf("got %v", a.Addrs)
	}
}

func TestReceiverClose(t *testing.T) {
	r, srv := newReceiver(t)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(context.Background()); !errors.Is(err, announce.ErrClosed) {
		t.Fatal(err)
	}
	if code, retry := putFrom(t, "127.0.0.1", srv.URL+"/announce", encode(t, httpMessage(t, newPeer(t), "a"), false), nil); code != 503 || retry == "" {
		t.Fatalf("announce to a closed receiver: %d, Retry-After %q; want 503 with a Retry-After", code, retry)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r2, _ := newReceiver(t)
	if _, err := r2.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestReceiverOptions(t *testing.T) {
	for _, o := range []announce.Option{
		announce.WithBodyLimit(0), announce.WithQueueSize(0), announce.WithDedupeSize(-1), announce.WithLogger(nil),
	} {
		if _, err := announce.NewReceiver(o); !errors.Is(err, announce.ErrInvalidOption) {
			t.Errorf("got %v", err)
		}
	}
}

func TestHTTPSender(t *testing.T) {
	r1, srv1 := newReceiver(t)
	r2, srv2 := newReceiver(t)
	p := newPeer(t)
	for _, js := range []bool{false, true} {
		s, err := announce.NewHTTPSender([]string{srv1.URL, srv2.URL + "/ingest/announce", srv1.URL + "/"}, p,
			announce.WithJSON(js))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		// One address without /p2p/ and one with: both end up with it.
		m := announce.Message{Cid: testCID(t, "ad"), Addrs: mustAddrs(t,
			"/ip4/127.0.0.1/tcp/3104/http", "/dns4/pub.example/tcp/443/https/p2p/"+p.String())}
		if js {
			m.Cid = testCID(t, "ad-json")
		}
		if err := s.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		cancel()
		for _, r := range []*announce.Receiver{r1, r2} {
			a := next(t, r)
			if a.Publisher != p || !a.Cid.Equals(m.Cid) || len(a.Addrs) != 2 || a.Addrs[0].String() != "/ip4/127.0.0.1/tcp/3104/http" {
				t.Fatalf("got %+v", a)
			}
		}
		noNext(t, r1) // srv1 given twice, sent once
		s.Close()
		s.Close()
		if err := s.Send(context.Background(), m); !errors.Is(err, announce.ErrClosed) {
			t.Fatal(err)
		}
	}
}

func TestHTTPSenderErrors(t *testing.T) {
	p := newPeer(t)
	_, good := newReceiver(t)
	_, denying := newReceiver(t, announce.WithAllow(func(peer.ID) bool { return false }))
	const marker = "MARKER-4e1d-receiver-text"
	chatty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, marker, http.StatusBadRequest)
	}))
	defer chatty.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)

	s, err := announce.NewHTTPSender([]string{good.URL, denying.URL, slow.URL, chatty.URL}, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := announce.Message{Cid: testCID(t, "ad"), Addrs: mustAddrs(t, "/ip4/127.0.0.1/tcp/3104/http")}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = s.Send(ctx, m)
	if !errors.Is(err, announce.ErrRejected) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "400") ||
		strings.Contains(err.Error(), good.URL+"/announce") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), "MARKER") {
		t.Fatalf("the error quotes a receiver's body: %v", err)
	}

	for _, bad := range []announce.Message{
		{Cid: testCID(t, "x")},
		{Cid: testCID(t, "x"), Addrs: mustAddrs(t, "/ip4/127.0.0.1/tcp/1/p2p/"+newPeer(t).String())},
	} {
		if err := s.Send(context.Background(), bad); !errors.Is(err, announce.ErrNoPublisher) && !errors.Is(err, announce.ErrManyPublishers) {
			t.Errorf("Send(%+v) = %v", bad, err)
		}
	}
	for _, urls := range [][]string{nil, {"ftp://x"}, {"http://"}, {"://"}} {
		if _, err := announce.NewHTTPSender(urls, p); !errors.Is(err, announce.ErrInvalidOption) {
			t.Errorf("NewHTTPSender(%q) = %v", urls, err)
		}
	}
	if _, err := announce.NewHTTPSender([]string{good.URL}, ""); !errors.Is(err, announce.ErrInvalidOption) {
		t.Error(err)
	}
}
