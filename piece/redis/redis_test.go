package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/piecetest"
	"github.com/indexkit/indexkit/piece/redis"
)

func TestConformance(t *testing.T) {
	c := redistest.Client(t, redistest.Addr())
	piecetest.Run(t, func(t *testing.T, capacity int) piece.Store {
		s, err := redis.New(c, redistest.Prefix(t, c, "piece"), redis.WithCapacity(capacity))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestOptions(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: redistest.Addr()}) // never dialled
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
	c := redistest.Client(t, redistest.Addr())
	prefix := redistest.Prefix(t, c, "piece")
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
	if keys, err := redistest.Keys(t.Context(), c, prefix); err != nil || len(keys) != 2 {
		t.Errorf("keys under the prefix: %q, %v; want 2", keys, err)
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

// TestPipelinedPayloads runs many concurrent Payloads calls through the
// pipelining dispatcher, some with contexts that end early, then closes the
// store while calls are still being made: every call returns either its own
// piece's payloads, a not-found error, its context's error, or
// piece.ErrClosed; no call hangs, and no goroutine is left (goleak in
// TestMain).
func TestPipelinedPayloads(t *testing.T) {
	c := redistest.Client(t, redistest.Addr())
	for _, batch := range []int{1, 4, redis.DefaultMaxBatch} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			s, err := redis.New(c, redistest.Prefix(t, c, "piece"), redis.WithCapacity(8), redis.WithPipelining(batch))
			if err != nil {
				t.Fatal(err)
			}
			p := piecetest.Provider(1)
			const pieces = 8
			want := make([][]cid.Cid, pieces)
			for i := range pieces {
				all := piecetest.Payloads(i*100, 3+i)
				if err := s.AddPayloads(t.Context(), p, piecetest.PieceCID(i), all...); err != nil {
					t.Fatal(err)
				}
				want[i] = piecetest.Expect(p, piecetest.PieceCID(i), all, 8)
			}
			var wg sync.WaitGroup
			var closedSeen atomic.Int64
			for g := range 32 {
				wg.Go(func() {
					for i := range 200 {
						pc := (g + i) % (pieces + 1) // piece `pieces` is unknown
						ctx := t.Context()
						if i%5 == 0 {
							var cancel context.CancelFunc
							ctx, cancel = context.WithTimeout(ctx, time.Duration(i%3)*50*time.Microsecond)
							defer cancel()
						}
						got, err := s.Payloads(ctx, p, piecetest.PieceCID(pc))
						switch {
						case err == nil:
							if pc == pieces || !slices.Equal(got, want[pc]) {
								t.Errorf("piece %d: got %v, want %v", pc, got, want[pc])
								return
							}
						case errors.Is(err, piece.ErrPieceNotFound) && pc == pieces:
						case errors.Is(err, context.DeadlineExceeded) && ctx != t.Context():
						case errors.Is(err, piece.ErrClosed):
							closedSeen.Add(1)
							return
						default:
							t.Errorf("piece %d: unexpected error %v", pc, err)
							return
						}
					}
				})
			}
			time.Sleep(20 * time.Millisecond)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if _, err := s.Payloads(t.Context(), p, piecetest.PieceCID(0)); !errors.Is(err, piece.ErrClosed) {
				t.Errorf("Payloads after Close: %v, want ErrClosed", err)
			}
			t.Logf("%d goroutines stopped by Close", closedSeen.Load())
		})
	}
}
