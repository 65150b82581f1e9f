package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// redisAddr is REDIS_ADDR, else the machine's Redis.
func redisAddr() string {
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// unavailable fails the test under CI and skips it otherwise.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

// client connects to the test Redis and closes the client at the end.
func client(tb testing.TB) *goredis.Client {
	tb.Helper()
	addr := redisAddr()
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		unavailable(tb, "Redis at %s unreachable (set REDIS_ADDR): %v", addr, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// freshPrefix returns a random key prefix and deletes its keys at the end
// of the test (SCAN + UNLINK: the server may be shared, so never KEYS or
// FLUSHALL). Register it after client, so that it runs before the client
// is closed.
func freshPrefix(tb testing.TB, c *goredis.Client) string {
	tb.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "indexkit-test:piece:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() { unlinkPrefix(tb, c, prefix) })
	return prefix
}

func unlinkPrefix(tb testing.TB, c *goredis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	match := globEscape(prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			tb.Errorf("cleanup: SCAN %s: %v", match, err)
			return
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				tb.Errorf("cleanup: UNLINK: %v", err)
				return
			}
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// countPrefix counts the keys under prefix (tests only).
func countPrefix(tb testing.TB, c *goredis.Client, prefix string) int {
	tb.Helper()
	n := 0
	var cursor uint64
	for {
		keys, next, err := c.Scan(tb.Context(), cursor, globEscape(prefix)+"*", 1000).Result()
		if err != nil {
			tb.Fatalf("SCAN: %v", err)
		}
		n += len(keys)
		if cursor = next; cursor == 0 {
			return n
		}
	}
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
