package main

import (
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/internal/redistest"
)

// Every test closes its Redis clients and stops its processes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func needGit(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		redistest.Unavailable(tb, "git not found: %v", err)
	}
}

// testRedis returns the address of a Redis for the test and a fresh key
// prefix whose keys are deleted at the end: a redis-server of its own on a
// free loopback port (killed by PID at the end) when the binary exists,
// else REDIS_ADDR or 127.0.0.1:6379.
func testRedis(t *testing.T) (addr, prefix string) {
	t.Helper()
	addr = redistest.Addr()
	if _, err := exec.LookPath("redis-server"); err == nil {
		addr = redistest.StartServer(t).Addr()
	}
	c := redistest.Client(t, addr)
	return addr, redistest.Prefix(t, c, "fleet")
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
