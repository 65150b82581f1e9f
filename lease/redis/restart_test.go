package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/lease"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// ownServer runs a redis-server of the test's own on a free loopback port,
// without persistence, so that it can be killed and restarted empty.
type ownServer struct {
	t    *testing.T
	bin  string
	port int
	cmd  *exec.Cmd
}

func startOwnServer(t *testing.T) *ownServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server binary not found: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &ownServer{t: t, bin: bin, port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *ownServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *ownServer) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: s.addr()})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s not up: %v", s.addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server by its PID (SIGKILL: nothing is saved) and reaps it.
func (s *ownServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// A restart that loses every key (no persistence, SIGKILL) must not let a
// fence repeat or go backwards: the fence never falls below the server's
// clock in microseconds. The old holder's operations are refused, and the
// script cache, lost too, is reloaded by the NOSCRIPT fallback.
func TestFencesIncreaseAcrossDataLosingRestart(t *testing.T) {
	srv := startOwnServer(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.addr()})
	t.Cleanup(func() { _ = c.Close() })
	s, err := leaseredis.New(c, "restart:")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var last lease.Fence
	var old lease.Ref
	for i := range 3 {
		ref := grant(t, s, "a", fmt.Sprintf("n%d", i))
		if ref.Fence <= last {
			t.Fatalf("before restart: fence %d after %d", ref.Fence, last)
		}
		last, old = ref.Fence, ref
		if i < 2 {
			if err := s.Release(ctx, ref); err != nil {
				t.Fatal(err)
			}
		}
	}
	for restart := range 2 {
		srv.stop()
		srv.start()
		if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Fatalf("restart %d: DBSIZE %d, %v; want an empty server", restart, n, err)
		}
		// The old grant is gone with the data.
		rs, err := s.Renew(ctx, old)
		if err != nil {
			t.Fatalf("restart %d: Renew: %v", restart, err)
		}
		if !errors.Is(rs[0].Err, lease.ErrNotFound) {
			t.Fatalf("restart %d: Renew of a lost grant: %v", restart, rs[0].Err)
		}
		ref := grant(t, s, "a", "after")
		if ref.Fence <= last {
			t.Fatalf("restart %d: fence %d after %d: fences went backwards", restart, ref.Fence, last)
		}
		t.Logf("restart %d: fence %d before, %d after", restart, last, ref.Fence)
		if err := s.Release(ctx, old); !errors.Is(err, lease.ErrStaleFence) {
			t.Fatalf("restart %d: Release with the pre-restart fence: %v", restart, err)
		}
		last, old = ref.Fence, ref
	}
}
