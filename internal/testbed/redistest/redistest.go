package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// DefaultAddr is the machine's Redis, used when REDIS_ADDR is not set.
const DefaultAddr = "127.0.0.1:6379"

// Timeouts of the shared server's checks and cleanups.
const (
	pingTimeout    = 2 * time.Second
	cleanupTimeout = 10 * time.Second
)

// Addr returns the address of the test Redis: the environment variable
// REDIS_ADDR, else [DefaultAddr].
func Addr() string {
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return DefaultAddr
}

// Unavailable reports that a component the test needs (Redis, a binary) is
// missing: it fails the test with the message when the environment
// variable CI is set, and skips it otherwise. It does not return.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

// Client connects to the Redis at addr (a pool of 64 connections), checks
// it with PING (2 s), and closes the client at the end of the test. When
// PING fails it calls [Unavailable].
func Client(tb testing.TB, addr string) *goredis.Client {
	tb.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		Unavailable(tb, "Redis at %s unreachable (set REDIS_ADDR): %v", addr, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Prefix returns a fresh random key prefix, "indexkit-test:name:<16 hex>:"
// ("indexkit-test:<16 hex>:" when name is empty), and deletes every key
// under it at the end of the test with [Unlink] (10 s; a failure is
// reported with Errorf). Call it after [Client], so that the keys are
// deleted before c is closed.
func Prefix(tb testing.TB, c goredis.Cmdable, name string) string {
	tb.Helper()
	prefix := NewPrefix(name)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := Unlink(ctx, c, prefix); err != nil {
			tb.Errorf("cleanup of %s: %v", prefix, err)
		}
	})
	return prefix
}

// NewPrefix returns a fresh random key prefix as [Prefix] does, without
// registering a cleanup: the caller deletes its keys with [Unlink].
func NewPrefix(name string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	if name != "" {
		name += ":"
	}
	return "indexkit-test:" + name + hex.EncodeToString(b[:]) + ":"
}

// Unlink deletes every key whose name starts with prefix: SCAN with the
// prefix glob-escaped (so *, ?, [, ] and \ in it match only themselves),
// then UNLINK, batch by batch. It never runs KEYS or FLUSHALL, so it is
// safe on a shared server. It may be used outside tests, for example in a
// benchmark's cleanup.
func Unlink(ctx context.Context, c goredis.Cmdable, prefix string) error {
	return scan(ctx, c, prefix, func(keys []string) error {
		if err := c.Unlink(ctx, keys...).Err(); err != nil {
			return fmt.Errorf("UNLINK %d keys under %s: %w", len(keys), prefix, err)
		}
		return nil
	})
}

// Keys returns the names of the keys that start with prefix, found with
// SCAN (never KEYS), in no particular order.
func Keys(ctx context.Context, c goredis.Cmdable, prefix string) ([]string, error) {
	var all []string
	err := scan(ctx, c, prefix, func(keys []string) error {
		all = append(all, keys...)
		return nil
	})
	return all, err
}

// scan calls f with each non-empty batch of keys under prefix.
func scan(ctx context.Context, c goredis.Cmdable, prefix string, f func([]string) error) error {
	match := Match(prefix)
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return fmt.Errorf("SCAN %s: %w", match, err)
		}
		if len(keys) > 0 {
			if err := f(keys); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Match returns the SCAN/KEYS glob pattern of the keys that start with
// prefix: prefix with the glob's special characters escaped, then *.
func Match(prefix string) string {
	var b strings.Builder
	for _, r := range prefix {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String() + "*"
}

// RunID returns the run_id of the server c talks to (INFO server), new at
// every start of a redis-server: a test tells by it that a server
// restarted.
func RunID(tb testing.TB, c *goredis.Client) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // also in a cleanup
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	tb.Fatalf("no run_id in INFO server:\n%s", info)
	return ""
}
