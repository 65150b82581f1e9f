package redistest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
)

func TestAddr(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")
	if got := redistest.Addr(); got != redistest.DefaultAddr {
		t.Errorf("Addr() without REDIS_ADDR = %q, want %q", got, redistest.DefaultAddr)
	}
	t.Setenv("REDIS_ADDR", "127.0.0.1:7777")
	if got := redistest.Addr(); got != "127.0.0.1:7777" {
		t.Errorf("Addr() with REDIS_ADDR = %q", got)
	}
}

func TestNewPrefix(t *testing.T) {
	a, b := redistest.NewPrefix("piece"), redistest.NewPrefix("piece")
	if a == b {
		t.Errorf("two prefixes alike: %q", a)
	}
	for _, p := range []string{a, redistest.NewPrefix("")} {
		if !strings.HasPrefix(p, "indexkit-test:") || !strings.HasSuffix(p, ":") || len(p) < len("indexkit-test:")+17 {
			t.Errorf("prefix %q", p)
		}
	}
	if !strings.HasPrefix(a, "indexkit-test:piece:") {
		t.Errorf("prefix %q does not carry its name", a)
	}
}

// The child side of TestUnavailable: it does something only when the
// parent sets REDISTEST_CHILD.
func TestUnavailableChild(t *testing.T) {
	if os.Getenv("REDISTEST_CHILD") == "" {
		return
	}
	redistest.Unavailable(t, "component %s missing", "x")
	t.Error("Unavailable returned")
}

// Unavailable fails under CI and skips otherwise: the test binary runs the
// child test in a process of its own, with and without CI.
func TestUnavailable(t *testing.T) {
	for _, ci := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailableChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "REDISTEST_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		failed := errors.As(err, &exit)
		if err != nil && !failed {
			t.Fatalf("run the child: %v", err)
		}
		want, wantFailed := "--- SKIP: TestUnavailableChild", false
		if ci != "" {
			want, wantFailed = "--- FAIL: TestUnavailableChild", true
		}
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "component x missing") || failed != wantFailed {
			t.Errorf("CI=%q: exit error %v, output:\n%s\nwant %q and the message", ci, err, out, want)
		}
	}
}

// Unlink deletes exactly the keys under the prefix: glob characters in it
// match only themselves, and a key that an unescaped pattern would match
// survives.
func TestUnlinkAndKeys(t *testing.T) {
	c := redistest.Client(t, redistest.Addr())
	base := redistest.Prefix(t, c, "redistest")
	ctx := t.Context()
	prefix := base + "a[1]*:"
	inside := []string{prefix + "x", prefix + "y", prefix + "{z}"}
	outside := []string{base + "a1:x", base + "a1xx:x", base + "a[1]:x"} // matched by the unescaped glob
	for _, k := range append(slices.Clone(inside), outside...) {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := redistest.Keys(ctx, c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := slices.Sorted(slices.Values(inside)); !slices.Equal(keys, want) {
		t.Errorf("Keys = %q, want %q", keys, want)
	}
	if err := redistest.Unlink(ctx, c, prefix); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, inside...).Result(); err != nil || n != 0 {
		t.Errorf("after Unlink: %d of the prefix's keys exist (%v)", n, err)
	}
	if n, err := c.Exists(ctx, outside...).Result(); err != nil || n != int64(len(outside)) {
		t.Errorf("after Unlink: %d of %d other keys exist (%v)", n, len(outside), err)
	}
}

// Prefix's cleanup deletes the keys a (sub)test wrote under it.
func TestPrefixCleanup(t *testing.T) {
	c := redistest.Client(t, redistest.Addr())
	var prefix string
	t.Run("writer", func(t *testing.T) {
		prefix = redistest.Prefix(t, c, "redistest")
		for _, k := range []string{"a", "b", "c"} {
			if err := c.Set(t.Context(), prefix+k, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	keys, err := redistest.Keys(t.Context(), c, prefix)
	if err != nil || len(keys) != 0 {
		t.Errorf("after the subtest: keys %q under %s (%v), want none", keys, prefix, err)
	}
}

// A server without persistence comes back empty after Kill and Start, on
// the same port; it is killed by PID and reaped at the end of the test.
func TestServerRestartLosesData(t *testing.T) {
	lane.Integration(t, "starts a redis-server of its own")
	var pid int
	t.Run("server", func(t *testing.T) {
		s := redistest.StartServer(t)
		addr := s.Addr()
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		defer c.Close()
		ctx := t.Context()
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		first := s.PID()
		s.Kill()
		if s.PID() != 0 {
			t.Errorf("PID after Kill = %d, want 0", s.PID())
		}
		if alive(first) {
			t.Errorf("pid %d alive after Kill", first)
		}
		s.Kill() // idempotent
		s.Start()
		if s.Addr() != addr {
			t.Errorf("address changed across restart: %s, then %s", addr, s.Addr())
		}
		if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Errorf("after restart: DBSIZE %d, %v; want an empty server", n, err)
		}
		pid = s.PID()
	})
	if pid == 0 {
		t.Fatal("no server ran")
	}
	if alive(pid) {
		t.Errorf("redis-server pid %d alive after the test's cleanup", pid)
	}
}

// A persistent server keeps every acknowledged write across SIGKILL.
func TestServerAOFKeepsWrites(t *testing.T) {
	s := redistest.StartServer(t, redistest.WithAOF(""), redistest.WithStartTimeout(2*redistest.DefaultStartTimeout))
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	ctx := context.Background()
	for i := range 100 {
		if err := c.Incr(ctx, "n").Err(); err != nil {
			t.Fatalf("INCR %d: %v", i, err)
		}
	}
	s.Kill()
	s.Start()
	if n, err := c.Get(ctx, "n").Int(); err != nil || n != 100 {
		t.Errorf("after kill and restart: n = %d, %v; want 100", n, err)
	}
}

// alive reports whether a process with the PID exists (signal 0). The
// server was reaped, so the PID is gone unless the system reused it.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// Restart, graceful or not, comes back on the same port with a new
// process, a new run_id and, with the append-only file, every
// acknowledged write; it may run on a goroutine of its own.
func TestServerRestart(t *testing.T) {
	s := redistest.StartServer(t, redistest.WithAOF(""), redistest.WithStartTimeout(2*redistest.DefaultStartTimeout))
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	ctx := context.Background()
	for _, graceful := range []bool{true, false} {
		if err := c.Incr(ctx, "n").Err(); err != nil {
			t.Fatal(err)
		}
		pid, run := s.PID(), redistest.RunID(t, c)
		done := make(chan error)
		go func() { done <- s.Restart(graceful, nil) }()
		if err := <-done; err != nil {
			t.Fatalf("graceful=%v: %v", graceful, err)
		}
		if s.PID() == pid || alive(pid) {
			t.Errorf("graceful=%v: pid %d before, %d after (old one alive: %v)", graceful, pid, s.PID(), alive(pid))
		}
		if r := redistest.RunID(t, c); r == run {
			t.Errorf("graceful=%v: run_id %s unchanged", graceful, r)
		}
	}
	if n, err := c.Get(ctx, "n").Int(); err != nil || n != 2 {
		t.Errorf("after two restarts: n = %d, %v; want 2", n, err)
	}
}
