package main

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// Every test closes its Redis clients and stops its processes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// unavailable fails the test under CI and skips it otherwise.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

func needGit(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		unavailable(tb, "git not found: %v", err)
	}
}

// testRedis returns the address of a Redis for the test and a fresh key
// prefix: a redis-server of its own on a free loopback port (stopped by PID
// at the end) when the binary exists, else REDIS_ADDR or 127.0.0.1:6379
// with the prefix's keys deleted at the end.
func testRedis(t *testing.T) (addr, prefix string) {
	t.Helper()
	prefix = randomPrefix("fleet-test:")
	if _, err := exec.LookPath("redis-server"); err == nil {
		s, err := startRedis(context.Background(), t.TempDir())
		if err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Cleanup(s.Stop)
		return s.Addr, prefix
	}
	addr = os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		unavailable(t, "no redis-server binary and Redis at %s unreachable (set REDIS_ADDR): %v", addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := unlinkPrefix(ctx, c, prefix); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		_ = c.Close()
	})
	return addr, prefix
}

// waitFor polls cond every 50ms until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", d, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
