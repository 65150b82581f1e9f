package netlimit_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/netlimit"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// holder accepts every connection of a Listener and holds it open until
// the test ends, as a server that is sent nothing does.
type holder struct {
	ln *netlimit.Listener

	mu    sync.Mutex
	conns []net.Conn
	err   error // Accept's error, once it returned one
	done  chan struct{}
}

func hold(t *testing.T, opts ...netlimit.Option) *holder {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := netlimit.NewListener(inner, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h := &holder{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			c, err := ln.Accept()
			h.mu.Lock()
			if err != nil {
				h.err = err
				h.mu.Unlock()
				return
			}
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-h.done
		for _, c := range h.accepted() {
			c.Close()
		}
	})
	return h
}

func (h *holder) accepted() []net.Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]net.Conn(nil), h.conns...)
}

// dial connects from the loopback address from (127.0.0.1, 127.0.0.2: the
// whole 127.0.0.0/8 is loopback on Linux).
func dial(t *testing.T, from, to string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: waitTimeout}
	c, err := d.Dial("tcp", to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

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

// openOnes returns how many of conns the server still holds open: a read
// on a connection the server closed ends at once with EOF (or a reset), one
// on an open connection runs into the deadline.
func openOnes(t *testing.T, conns []net.Conn) int {
	t.Helper()
	deadline := time.Now().Add(500 * time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, c := range conns {
		c.SetReadDeadline(deadline)
		wg.Go(func() {
			_, err := c.Read(make([]byte, 1))
			if errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				n++
				mu.Unlock()
			} else if err == nil {
				t.Error("read a byte the server never sent")
			}
		})
	}
	wg.Wait()
	return n
}

func TestListenerPerSourceCap(t *testing.T) {
	const perIP = 5
	h := hold(t, netlimit.WithMaxConnsPerIP(perIP))
	addr := h.ln.Addr().String()
	var conns []net.Conn
	for range perIP + 10 {
		conns = append(conns, dial(t, "127.0.0.1", addr))
	}
	waitFor(t, "every connection accepted or rejected", func() bool {
		s := h.ln.Stats()
		return s.Accepted+s.Rejected == perIP+10
	})
	if s := h.ln.Stats(); s.Accepted != perIP || s.Rejected != 10 || s.Open != perIP || s.Sources != 1 {
		t.Errorf("stats %+v, want %d accepted and open from 1 source, 10 rejected", s, perIP)
	}
	if n := openOnes(t, conns); n != perIP {
		t.Errorf("%d connections open, want %d", n, perIP)
	}

	// Another source is served.
	other := dial(t, "127.0.0.2", addr)
	waitFor(t, "the other source accepted", func() bool { return len(h.accepted()) == perIP+1 })
	got := h.accepted()[perIP].RemoteAddr().(*net.TCPAddr).IP.String()
	if got != "127.0.0.2" {
		t.Errorf("accepted a connection from %s, want 127.0.0.2", got)
	}
	if n := openOnes(t, []net.Conn{other}); n != 1 {
		t.Error("the connection of another source was closed")
	}

	// A closed connection frees its source's slot, once however many times
	// it is closed.
	first := h.accepted()[0]
	first.Close()
	first.Close()
	if s := h.ln.Stats(); s.Open != perIP || s.Sources != 2 {
		t.Errorf("after a Close: stats %+v, want %d open from 2 sources", s, perIP)
	}
	again := dial(t, "127.0.0.1", addr)
	waitFor(t, "a new connection from the first source", func() bool { return len(h.accepted()) == perIP+2 })
	if n := openOnes(t, []net.Conn{again}); n != 1 {
		t.Error("the freed slot did not take a new connection")
	}
	if s := h.ln.Stats(); s.Rejected != 10 {
		t.Errorf("rejected %d, want still 10", s.Rejected)
	}
}

// At the total cap, each new connection is accepted at once and evicts
// the open one whose current exchange began the longest ago: the accept,
// or the server's last turn from reading to writing or back.
func TestListenerTotalCapEvicts(t *testing.T) {
	const total = 3
	h := hold(t, netlimit.WithMaxConns(total), netlimit.WithMaxConnsPerIP(0))
	addr := h.ln.Addr().String()
	var clients []net.Conn // clients[i] is the peer of h.accepted()[i]
	connect := func() {
		t.Helper()
		clients = append(clients, dial(t, "127.0.0.1", addr))
		waitFor(t, "the connection accepted", func() bool { return len(h.accepted()) == len(clients) })
		time.Sleep(2 * time.Millisecond) // distinct times
	}
	open := func(want ...int) {
		t.Helper()
		var conns []net.Conn
		for _, i := range want {
			conns = append(conns, clients[i])
		}
		if n := openOnes(t, conns); n != len(want) {
			t.Errorf("%d of connections %v open, want all", n, want)
		}
	}
	closed := func(i int) {
		t.Helper()
		if n := openOnes(t, clients[i:i+1]); n != 0 {
			t.Errorf("connection %d still open, want it evicted", i)
		}
	}
	for range total {
		connect()
	}
	connect() // 3: evicts 0, the oldest accept
	closed(0)
	open(1, 2, 3)
	if s := h.ln.Stats(); s.Open != total || s.Evicted != 1 || s.Accepted != total+1 {
		t.Errorf("stats %+v, want %d open, 1 evicted, %d accepted", s, total, total+1)
	}

	// The server writes on 1: its answer is a newer exchange than 2's
	// accept, so 4 evicts 2.
	if _, err := h.accepted()[1].Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	clients[1].SetReadDeadline(time.Now().Add(waitTimeout)) // openOnes set one that has passed
	if _, err := clients[1].Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	connect() // 4
	closed(2)
	// The server reads a request on 3: newer than 4's accept and 1's
	// answer, so 5 evicts 1, then 6 evicts 4.
	if _, err := clients[3].Write([]byte("GET")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(h.accepted()[3], make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	connect() // 5
	closed(1)
	connect() // 6
	closed(4)
	open(3, 5, 6)
	if s := h.ln.Stats(); s.Open != total || s.Evicted != 4 || s.Sources != 1 {
		t.Errorf("stats %+v, want %d open from 1 source, 4 evicted", s, total)
	}
}

// Close ends an Accept that waits for a connection; the accepted ones stay
// open.
func TestListenerCloseEndsAccept(t *testing.T) {
	h := hold(t, netlimit.WithMaxConns(1))
	dial(t, "127.0.0.1", h.ln.Addr().String())
	waitFor(t, "the connection accepted", func() bool { return len(h.accepted()) == 1 })
	if err := h.ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.done:
	case <-time.After(waitTimeout):
		t.Fatal("Accept still waiting after Close")
	}
	if !errors.Is(h.err, net.ErrClosed) {
		t.Errorf("Accept: %v, want net.ErrClosed", h.err)
	}
	c := h.accepted()[0]
	if _, err := c.Write([]byte("x")); err != nil {
		t.Errorf("write on an accepted connection after Close: %v", err)
	}
}

func TestListenerHTTPHalfClose(t *testing.T) {
	// net/http half-closes through CloseWrite: it must reach the TCP
	// connection under the wrapper.
	h := hold(t)
	c := dial(t, "127.0.0.1", h.ln.Addr().String())
	waitFor(t, "the connection accepted", func() bool { return len(h.accepted()) == 1 })
	cw, ok := h.accepted()[0].(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("accepted connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client read after CloseWrite: %v, want EOF", err)
	}
}

func TestNewListenerOptions(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	for _, o := range []netlimit.Option{netlimit.WithMaxConns(-1), netlimit.WithMaxConnsPerIP(-1)} {
		if _, err := netlimit.NewListener(inner, o); !errors.Is(err, netlimit.ErrInvalidOption) {
			t.Errorf("NewListener: %v, want ErrInvalidOption", err)
		}
	}
	if _, err := netlimit.NewListener(nil); !errors.Is(err, netlimit.ErrInvalidOption) {
		t.Errorf("NewListener(nil): %v, want ErrInvalidOption", err)
	}
}

func TestSource(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:80":                  "192.0.2.1",
		"192.0.2.1":                     "192.0.2.1",
		"[::ffff:192.0.2.1]:80":         "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:443":    "2001:db8:1:2::",
		"[2001:db8:1:2:ffff::1%eth0]:1": "2001:db8:1:2::",
		"[::1]:80":                      "::",
	} {
		got, ok := netlimit.SourceOf(in)
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("SourceOf(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "example.com:80", "pipe", "@"} {
		if got, ok := netlimit.SourceOf(in); ok {
			t.Errorf("SourceOf(%q) = %v, want none", in, got)
		}
	}
}
