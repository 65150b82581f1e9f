package redis_test

import (
	"errors"
	"slices"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/piecetest"
	"github.com/indexkit/indexkit/piece/redis"
)

func TestConformance(t *testing.T) {
	c := client(t)
	piecetest.Run(t, func(t *testing.T, capacity int) piece.Store {
		s, err := redis.New(c, freshPrefix(t, c), redis.WithCapacity(capacity))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestOptions(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: redisAddr()}) // never dialled
	defer c.Close()
	for _, k := range []int{0, redis.MaxCapacity + 1} {
		if _, err := redis.New(c, "x:", redis.WithCapacity(k)); err == nil {
			t.Errorf("WithCapacity(%d): no error", k)
		}
	}
	if _, err := redis.New(nil, "x:"); err == nil {
		t.Error("New(nil client): no error")
	}
	if _, err := redis.New(c, "x:", redis.WithClock(nil)); err == nil {
		t.Error("WithClock(nil): no error")
	}
}

// TestKeys pins the documented key layout: one status hash per provider and
// one ZSET per piece, all under the prefix with the provider's hash tag,
// and reservoir members that are piece.PayloadKey with score 0.
func TestKeys(t *testing.T) {
	c := client(t)
	prefix := freshPrefix(t, c)
	s, err := redis.New(c, prefix, redis.WithCapacity(4))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, pc := piecetest.Provider(1), piecetest.PieceCID(1)
	all := piecetest.Payloads(0, 9)
	if err := s.AddPayloads(t.Context(), p, pc, all...); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, c, prefix); n != 2 {
		t.Errorf("%d keys under the prefix, want 2", n)
	}
	zkey := prefix + "{" + p.String() + "}:piece:" + pc.String()
	zs, err := c.ZRangeWithScores(t.Context(), zkey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, x := range piecetest.Expect(p, pc, all, 4) {
		want = append(want, piece.PayloadKey(p, pc, x))
	}
	var got []string
	for _, z := range zs {
		if z.Score != 0 {
			t.Errorf("member score %v, want 0", z.Score)
		}
		got = append(got, z.Member.(string))
	}
	if !slices.Equal(got, want) {
		t.Errorf("members %q, want %q", got, want)
	}
	if n, err := c.HGet(t.Context(), prefix+"{"+p.String()+"}:status", "pieces").Int(); err != nil || n != 1 {
		t.Errorf("status pieces = %d, %v; want 1", n, err)
	}
}

// TestUnreachable shows a Redis failure as an error naming the operation,
// not as not-found.
func TestUnreachable(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	s, err := redis.New(c, "x:")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Payloads(t.Context(), piecetest.Provider(1), piecetest.PieceCID(1))
	if err == nil || errors.Is(err, piece.ErrProviderNotFound) || errors.Is(err, piece.ErrPieceNotFound) {
		t.Errorf("Payloads on an unreachable server: err = %v, want a connection error", err)
	}
	if err := s.AddPayloads(t.Context(), piecetest.Provider(1), piecetest.PieceCID(1), piecetest.CID("a")); err == nil {
		t.Error("AddPayloads on an unreachable server: no error")
	}
}
