package piece_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/redistest"
	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/memory"
	"github.com/indexkit/indexkit/piece/piecetest"
	"github.com/indexkit/indexkit/piece/redis"
)

// rawNsPerOp is the last raw baseline's ns/op in this process, so later
// sub-benchmarks can report their rate as a fraction of it.
var rawNsPerOp atomic.Int64

const benchPieces = 64

// BenchmarkSample measures signed sample requests over loopback HTTP (a
// real net/http server on 127.0.0.1, keep-alive clients, 8 goroutines per
// GOMAXPROCS) against the memory and the Redis stores, beside a raw net/http
// handler writing a fixed JSON body of about the same size, in the same
// run. Every request has a fresh seed, so every answer is chosen and signed
// afresh. Sub-benchmarks after raw report "raw-ratio": their request rate
// over raw's (targets: >= 0.75 memory, >= 0.60 Redis). The memory-drand and
// redis-drand variants give every request the same seed, as checkers using
// one DRAND round's randomness do: answers are still read from the store on
// every request, and a byte-identical answer's signature is reused.
//
//	go test -run '^$' -bench BenchmarkSample -benchtime 3s ./piece/
func BenchmarkSample(b *testing.B) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	p := piecetest.Provider(1)
	fill := func(b *testing.B, s piece.Store) {
		for i := range benchPieces {
			if err := s.AddPayloads(context.Background(), p, piecetest.PieceCID(i), piecetest.Payloads(i*100, 50)...); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("raw", func(b *testing.B) {
		body := []byte(`{"samples":["bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"],"pubkey":"CAESIPdjKd+mUaSEVuuPJ7y5MgGjlK5SPBkoKqpQgA7qCx7J","signature":"lOQsf0tJ1n8wJ5HH/0V8nQyM1Mz6Gxv0u5X2Y6mfyK8dBnNrjLkqWa1tQ9oW8iLxK+qzFS5T7ZpNMOr3H6nxAA=="}` + "\n")
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(body)
		})
		ns := runHTTP(b, h, p)
		rawNsPerOp.Store(int64(ns))
	})
	b.Run("memory", func(b *testing.B) {
		s, err := memory.New()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		fill(b, s)
		h, err := piece.NewHandler(s, key)
		if err != nil {
			b.Fatal(err)
		}
		reportRatio(b, runHTTP(b, h, p))
	})
	b.Run("memory-drand", func(b *testing.B) {
		s, err := memory.New()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		fill(b, s)
		h, err := piece.NewHandler(s, key)
		if err != nil {
			b.Fatal(err)
		}
		reportRatio(b, runHTTPSeed(b, h, p, true))
	})
	benchRedis := func(b *testing.B, shared bool, opts ...redis.Option) {
		rdb := redistest.Client(b, redistest.Addr())
		prefix := redistest.Prefix(b, rdb, "piece-bench")
		s, err := redis.New(rdb, prefix, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		fill(b, s)
		h, err := piece.NewHandler(s, key)
		if err != nil {
			b.Fatal(err)
		}
		srv0 := redisCPU(b, rdb)
		ns := runHTTPSeed(b, h, p, shared)
		if srv := redisCPU(b, rdb) - srv0; srv > 0 {
			b.ReportMetric(float64(srv.Microseconds())/float64(b.N), "redis-cpu-µs/op")
		}
		reportRatio(b, ns)
	}
	b.Run("redis", func(b *testing.B) { benchRedis(b, false) })
	b.Run("redis-unpipelined", func(b *testing.B) { benchRedis(b, false, redis.WithPipelining(1)) })
	b.Run("redis-drand", func(b *testing.B) { benchRedis(b, true) })
}

// redisCPU returns the CPU time the Redis server has used (INFO cpu), 0 if
// unknown. The server may be shared, so the figure is an upper bound.
func redisCPU(b *testing.B, c *goredis.Client) time.Duration {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				total += f
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}

func reportRatio(b *testing.B, ns float64) {
	if raw := rawNsPerOp.Load(); raw > 0 && ns > 0 {
		b.ReportMetric(float64(raw)/ns, "raw-ratio")
	}
}

// runHTTP serves h on 127.0.0.1 and runs b.N sample requests over
// keep-alive connections from parallel clients, each with a seed of its own;
// it returns ns/op.
func runHTTP(b *testing.B, h http.Handler, p interface{ String() string }) float64 {
	return runHTTPSeed(b, h, p, false)
}

// runHTTPSeed is runHTTP with every request given the same seed when
// shared is set.
func runHTTPSeed(b *testing.B, h http.Handler, p interface{ String() string }, shared bool) float64 {
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	// The URL of request i is urls[i%benchPieces] followed by its seed: the
	// counter i (unique), or a fixed round value (shared).
	urls := make([]string, benchPieces)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/sample/%s/%s?seed=", srv.URL, p, piecetest.PieceCID(i))
	}
	var ctr atomic.Uint64
	var failed atomic.Value
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := ctr.Add(1)
			seed := i
			if shared {
				seed = 0x5eed
			}
			resp, err := client.Get(urls[i%benchPieces] + strconv.FormatUint(seed, 16))
			if err != nil {
				failed.Store(err.Error())
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed.Store(resp.Status)
			}
		}
	})
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatalf("a request failed: %v", f)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	return float64(elapsed.Nanoseconds()) / float64(b.N)
}

// processCPU returns the user+system CPU time this process has used
// (server, clients and the kernel work done on their behalf).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
