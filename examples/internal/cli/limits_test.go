package cli

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/netlimit"
)

// waitTimeout bounds the waits of these tests.
const waitTimeout = 20 * time.Second

// waitFor polls cond until it holds, failing the test after waitTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// slowClient is a raw TCP client sending a chunked request body that never
// ends, a byte at a time.
type slowClient struct {
	sent   atomic.Int64  // chunks written
	closed chan struct{} // closed once the server has closed the connection
}

// slowBody connects from the loopback address from to addr and PUTs path
// with a chunked body, a one-byte chunk every interval, until the server
// closes the connection or the test ends.
func slowBody(t *testing.T, from, addr, path string, interval time.Duration) *slowClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: waitTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	sc := &slowClient{closed: make(chan struct{})}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); c.Close() })
	go func() {
		defer close(sc.closed)
		io.Copy(io.Discard, c) // an answer, if any, then EOF or a reset
	}()
	go func() {
		if _, err := fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", path); err != nil {
			return
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-sc.closed:
				return
			case <-t.C:
			}
			if _, err := io.WriteString(c, "1\r\nx\r\n"); err != nil {
				return
			}
			sc.sent.Add(1)
		}
	}()
	return sc
}

// get GETs url with a client of its own dialing from the loopback address
// from, and returns the body.
func get(from, url string, timeout time.Duration) (string, error) {
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return string(b), err
}

// bodyHandler reads request bodies as the role handlers do (bounded by
// MaxBytesReader) on /read, ignores them on /ignore, and answers "ok".
func bodyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<20)); err != nil {
				http.Error(w, "cannot read body", http.StatusBadRequest)
				return
			}
		}
		fmt.Fprint(w, "ok")
	})
}

func TestEndlessChunkedBodyCut(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	s := serve(t, bodyHandler(), time.Second, func(srv *http.Server) { srv.ReadTimeout = readTimeout })
	for _, path := range []string{"/read", "/ignore"} {
		t.Run(path, func(t *testing.T) {
			begin := time.Now()
			c := slowBody(t, "127.0.0.1", s.addr, path, 10*time.Millisecond)
			select {
			case <-c.closed:
			case <-time.After(waitTimeout):
				t.Fatalf("connection still open after %v, with a %v read deadline", waitTimeout, readTimeout)
			}
			// Generous: the deadline plus scheduling on a loaded machine.
			if took := time.Since(begin); took > readTimeout+3*time.Second {
				t.Errorf("connection closed after %v, with a %v read deadline", took, readTimeout)
			}
			if c.sent.Load() == 0 {
				t.Error("no chunk sent: the test proves nothing")
			}
		})
	}
}

func TestSlowBodyAttack(t *testing.T) {
	// About 200 slow-body clients from one address, against the caps of
	// Listen and the deadlines of httpserve.NewServer (shortened).
	const clients = 200

	t.Run("per-source cap", func(t *testing.T) {
		const perIP, readTimeout = 64, 2 * time.Second
		s := serveOn(t, bodyHandler(), time.Second, 128, perIP, func(srv *http.Server) { srv.ReadTimeout = readTimeout })
		ln := s.ln.(*netlimit.Listener)
		for range clients {
			slowBody(t, "127.0.0.1", s.addr, "/read", 50*time.Millisecond)
		}
		waitFor(t, "every slow client accepted or rejected", func() bool {
			st := ln.Stats()
			return st.Accepted+st.Rejected >= clients
		})
		if st := ln.Stats(); st.Rejected < clients-perIP {
			t.Errorf("stats %+v: want at least %d rejected", st, clients-perIP)
		}
		// Another source is served at once, while the slow ones hold their
		// slots (well within their read deadline).
		if body, err := get("127.0.0.2", "http://"+s.addr+"/", readTimeout/2); err != nil || body != "ok" {
			t.Errorf("GET from another source: %q, %v", body, err)
		}
		// The deadline frees the attacker's own address too.
		waitFor(t, "the slow clients cut by the read deadline", func() bool { return ln.Stats().Open == 0 })
		if body, err := get("127.0.0.1", "http://"+s.addr+"/", waitTimeout); err != nil || body != "ok" {
			t.Errorf("GET from the attacker's address after the deadline: %q, %v", body, err)
		}
	})

	t.Run("total cap", func(t *testing.T) {
		// Without a per-source cap the slow clients fill the total one;
		// Accept waits, and the read deadline frees the slots.
		const total, readTimeout = 64, 500 * time.Millisecond
		s := serveOn(t, bodyHandler(), time.Second, total, 0, func(srv *http.Server) { srv.ReadTimeout = readTimeout })
		ln := s.ln.(*netlimit.Listener)
		for range clients {
			slowBody(t, "127.0.0.1", s.addr, "/read", 50*time.Millisecond)
		}
		waitFor(t, "the slow clients at the cap", func() bool { return ln.Stats().Open == total })
		if body, err := get("127.0.0.2", "http://"+s.addr+"/", waitTimeout); err != nil || body != "ok" {
			t.Errorf("GET behind the slow clients: %q, %v", body, err)
		}
		if st := ln.Stats(); st.Open > total || st.Rejected != 0 {
			t.Errorf("stats %+v, want at most %d open, none rejected", st, total)
		}
	})
}

func TestListen(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, ok := ln.(*netlimit.Listener); !ok {
		t.Errorf("Listen returned a %T, want a *netlimit.Listener", ln)
	}
	// A busy port is net.Listen's error, naming the address and the cause.
	_, err = Listen(ln.Addr().String(), 0, 0)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Listen on a busy port: %v", err)
	}
	for _, c := range [][2]int{{-1, 0}, {0, -1}} {
		if _, err := Listen("127.0.0.1:0", c[0], c[1]); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("Listen(%d, %d): %v", c[0], c[1], err)
		}
	}
}

func TestRateBurst(t *testing.T) {
	for rate, want := range map[float64]int{0.001: 1, 0.5: 1, 1: 2, 2.2: 5, 10: 20, 100: 200} {
		if got := RateBurst(rate); got != want {
			t.Errorf("RateBurst(%v) = %d, want %d", rate, got, want)
		}
	}
}

func TestCheckRate(t *testing.T) {
	for _, v := range []float64{0, 0.5, 10} {
		if err := CheckRate("-r", v); err != nil {
			t.Errorf("CheckRate(%v): %v", v, err)
		}
	}
	for _, v := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := CheckRate("-r", v); err == nil || !strings.HasPrefix(err.Error(), "-r ") {
			t.Errorf("CheckRate(%v): %v, want an error naming -r", v, err)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes(" 127.0.0.0/8, ::1/128,,192.0.2.7 ,2001:db8::1")
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got); s != "[127.0.0.0/8 ::1/128 192.0.2.7/32 2001:db8::1/128]" {
		t.Errorf("ParsePrefixes = %s", s)
	}
	if got, err := ParsePrefixes(DefaultAnnounceRateExempt); err != nil || len(got) != 0 {
		t.Errorf("the default (nothing exempt): %v, %v", got, err)
	}
	if got, err := ParsePrefixes(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "localhost", "10.0.0.0/8,x"} {
		if _, err := ParsePrefixes(bad); err == nil {
			t.Errorf("ParsePrefixes(%q): no error", bad)
		}
	}
}
