package netproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/internal/testbed/netproxy"
)

// Every test closes its proxies, whose Close waits for their goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wait bounds every blocking step of these tests.
const wait = 10 * time.Second

// echoServer runs a loopback echo server until the end of the test. It
// answers each connection until the client ends its stream, then closes.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func listen(t *testing.T, target string) *netproxy.Proxy {
	t.Helper()
	p, err := netproxy.Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(wait))
	return c.(*net.TCPConn)
}

// roundTrip sends msg and reads its echo, returning how long it took.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := fmt.Fprintln(c, msg); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read echo of %q: %v", msg, err)
	}
	if got != msg+"\n" {
		t.Fatalf("echo %q, want %q", got, msg+"\n")
	}
	return time.Since(start)
}

func TestListenRejectsBadTarget(t *testing.T) {
	for _, target := range []string{"", "no-port", "127.0.0.1"} {
		if p, err := netproxy.Listen(target); err == nil {
			_ = p.Close()
			t.Errorf("Listen(%q): no error", target)
		}
	}
}

func TestAddrIsLoopback(t *testing.T) {
	p := listen(t, echoServer(t))
	host, _, err := net.SplitHostPort(p.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr %q (%v), want 127.0.0.1:port", p.Addr(), err)
	}
}

// Many connections at once, many messages each: every byte arrives, in
// order, on the right connection.
func TestForwardsInOrder(t *testing.T) {
	p := listen(t, echoServer(t))
	p.SetDelay(time.Millisecond, time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", p.Addr(), wait)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(wait))
			// Write everything first, then read, so that many chunks are
			// queued at once.
			go func() {
				w := bufio.NewWriter(c)
				for j := range 200 {
					fmt.Fprintf(w, "conn %d message %d\n", i, j)
				}
				_ = w.Flush()
			}()
			r := bufio.NewReader(c)
			for j := range 200 {
				got, err := r.ReadString('\n')
				if want := fmt.Sprintf("conn %d message %d\n", i, j); err != nil || got != want {
					errs <- fmt.Errorf("conn %d: read %q, %v; want %q", i, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A one-way delay holds each direction's bytes at least that long: the
// round trip costs at least up+down. Only lower bounds are checked.
func TestDelay(t *testing.T) {
	p := listen(t, echoServer(t))
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "warm")
	const d = 80 * time.Millisecond
	for _, tc := range []struct {
		name     string
		up, down time.Duration
	}{
		{"up", d, 0},
		{"down", 0, d},
		{"both", d, d},
	} {
		p.SetDelay(tc.up, tc.down)
		if up, down := p.Delay(); up != tc.up || down != tc.down {
			t.Fatalf("%s: Delay() = %v, %v", tc.name, up, down)
		}
		if rtt := roundTrip(t, c, r, tc.name); rtt < tc.up+tc.down {
			t.Errorf("%s: round trip %v, want at least %v", tc.name, rtt, tc.up+tc.down)
		}
	}
	p.SetDelay(-time.Second, 0)
	if up, _ := p.Delay(); up != 0 {
		t.Errorf("negative delay read back as %v, want 0", up)
	}
}

// A paused proxy delivers nothing, on open and on new connections, until
// it resumes; then everything queued arrives in order.
func TestPauseResume(t *testing.T) {
	p := listen(t, echoServer(t))
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")

	p.Pause()
	if !p.Paused() {
		t.Fatal("Paused() false after Pause")
	}
	fmt.Fprintln(c, "during 1")
	fmt.Fprintln(c, "during 2")
	c2 := dial(t, p.Addr()) // accepted, but its bytes stall too
	fmt.Fprintln(c2, "new conn")
	for _, conn := range []*net.TCPConn{c, c2} {
		_ = conn.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
		var b [1]byte
		if n, err := conn.Read(b[:]); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read while paused: %d bytes, %v; want a timeout", n, err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(wait))
	}

	p.Resume()
	for _, want := range []string{"during 1\n", "during 2\n"} {
		if got, err := r.ReadString('\n'); err != nil || got != want {
			t.Fatalf("after resume: %q, %v; want %q", got, err, want)
		}
	}
	if got, err := bufio.NewReader(c2).ReadString('\n'); err != nil || got != "new conn\n" {
		t.Fatalf("new connection after resume: %q, %v", got, err)
	}
	roundTrip(t, c, r, "after")
}

// Cut closes both sides of every open connection; the proxy goes on
// accepting.
func TestCut(t *testing.T) {
	p := listen(t, echoServer(t))
	c1, c2 := dial(t, p.Addr()), dial(t, p.Addr())
	roundTrip(t, c1, bufio.NewReader(c1), "one")
	roundTrip(t, c2, bufio.NewReader(c2), "two")
	if n := p.Conns(); n != 2 {
		t.Fatalf("Conns() = %d, want 2", n)
	}
	p.Pause() // a cut also drops what a pause holds
	fmt.Fprintln(c1, "lost")
	if n := p.Cut(); n != 2 {
		t.Fatalf("Cut() = %d, want 2", n)
	}
	for i, c := range []*net.TCPConn{c1, c2} {
		if _, err := c.Read(make([]byte, 16)); err == nil {
			t.Errorf("conn %d: read after Cut succeeded", i+1)
		}
	}
	if n := p.Conns(); n != 0 {
		t.Fatalf("Conns() after Cut = %d, want 0", n)
	}
	p.Resume()
	c3 := dial(t, p.Addr())
	roundTrip(t, c3, bufio.NewReader(c3), "three")
}

// A client that ends its stream still gets every reply, then the end of
// the server's stream.
func TestHalfClose(t *testing.T) {
	p := listen(t, echoServer(t))
	p.SetDelay(20*time.Millisecond, 20*time.Millisecond)
	c := dial(t, p.Addr())
	fmt.Fprint(c, "last words")
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last words" {
		t.Fatalf("read after half-close: %q, %v", got, err)
	}
	deadline := time.Now().Add(wait)
	for p.Conns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("connection still open %v after both sides ended", wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A target that refuses: the accepted connection is closed.
func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p := listen(t, addr)
	c := dial(t, p.Addr())
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a proxy whose target is down succeeded")
	}
}

// Close, even while paused with bytes queued, closes every connection,
// stops listening, and may be called again.
func TestClose(t *testing.T) {
	p, err := netproxy.Listen(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	roundTrip(t, c, bufio.NewReader(c), "hi")
	p.Pause()
	fmt.Fprintln(c, "queued")
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("read after Close succeeded")
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		_ = c.Close()
		t.Error("dial after Close succeeded")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
