package httpserve

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A request that never ends does not hold the shutdown past its timeout:
// the server is closed, the log says so, and the stop is clean.
func TestServeShutdownBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logBuf syncBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	entered := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}), log)
	ctx, stop := context.WithCancel(t.Context())
	eg, gctx := errgroup.WithContext(ctx)
	Serve(gctx, eg, "held", srv, ln, 100*time.Millisecond)
	go http.Get("http://" + ln.Addr().String())
	<-entered
	stop()
	done := make(chan error, 1)
	go func() { done <- WaitStopped(gctx, eg, log) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitStopped: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown waited for a request that never ends")
	}
	for _, want := range []string{"held server: connections still busy 100ms after shutdown began; closed them", "msg=stopped"} {
		if !strings.Contains(logBuf.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, logBuf.String())
		}
	}
}

// A listener that fails ends the group with an error naming the server,
// and WaitStopped returns it.
func TestServeListenerError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	log := slog.New(slog.DiscardHandler)
	eg, gctx := errgroup.WithContext(t.Context())
	Serve(gctx, eg, "closed", NewServer(http.NotFoundHandler(), log), ln, time.Second)
	err = WaitStopped(gctx, eg, log)
	if err == nil || !strings.HasPrefix(err.Error(), "closed server: ") || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WaitStopped = %v, want closed server: ... use of closed network connection", err)
	}
}

// The server has every deadline.
func TestNewServer(t *testing.T) {
	srv := NewServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.ReadTimeout != ReadTimeout ||
		srv.WriteTimeout != WriteTimeout || srv.IdleTimeout != IdleTimeout || srv.ErrorLog == nil {
		t.Fatalf("server %+v lacks a deadline or its error log", srv)
	}
	if srv.ReadHeaderTimeout != 10*time.Second || srv.ReadTimeout != 30*time.Second ||
		srv.WriteTimeout != time.Minute || srv.IdleTimeout != 2*time.Minute {
		t.Errorf("deadlines %v, %v, %v, %v; want 10s, 30s, 1m, 2m", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
}
