package scale

// The raw Pebble baseline: the same multihashes written straight to a
// fresh Pebble with default options.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	indexpebble "github.com/indexkit/indexkit/store/pebble"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/ingest/chaingen"
)

// rawBatch is the keys per batch commit, the node's ingest batch
// (ingest.DefaultBatchSize).
const rawBatch = 65_536

// rawResult is what the baseline child prints, as JSON, on its standard
// output.
type rawResult struct {
	Figures  Figures
	Seq, Par Latency
}

// rawArgs are the baseline child's arguments for the chains of pubs.
func rawArgs(c Config, dir string, pubs []*publisher) []string {
	seeds := make([]string, len(pubs))
	counts := make([]string, len(pubs))
	for i, p := range pubs {
		seeds[i] = strconv.FormatUint(c.chainConfig(i).Seed, 10)
		counts[i] = strconv.FormatUint(p.chain.Multihashes(), 10)
	}
	return []string{"rawpebble", "-dir", dir, "-seeds", strings.Join(seeds, ","), "-counts", strings.Join(counts, ","),
		"-samples", strconv.Itoa(c.Samples), "-clients", strconv.Itoa(c.Clients), "-status", c.Status.String()}
}

// rawMain is the baseline child: it opens a fresh Pebble (v2, default
// options) in -dir, writes key = multihash, value = an 8-byte record ID
// for every multihash of the chains (-seeds, -counts), rawBatch keys per
// commit without sync as the node's store commits, and measures itself
// from /proc as the benchmark measures the node: CPU and wall time of the
// writes, RSS after them and at peak, the disk allocated and the
// compaction debt. Then it times point gets of -samples multihashes, one
// goroutine at a time and with -clients goroutines, and prints a
// rawResult.
func rawMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rawpebble", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "fresh Pebble `directory`")
	seedsFlag := fs.String("seeds", "", "comma-separated chain seeds")
	countsFlag := fs.String("counts", "", "comma-separated multihash counts, one per seed")
	samples := fs.Int("samples", DefaultSamples, "point gets timed")
	clients := fs.Int("clients", DefaultClients, "concurrent goroutines of the second timing")
	status := fs.Duration("status", DefaultStatus, "interval of the progress lines (msg=writing keys=N) on standard error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	seeds, err1 := parseUints(*seedsFlag)
	counts, err2 := parseUints(*countsFlag)
	if err := errors.Join(err1, err2); err != nil || len(seeds) != len(counts) || len(seeds) == 0 || *dir == "" {
		return fmt.Errorf("rawpebble: want -dir and as many -seeds as -counts: %v", err)
	}
	db, err := pebble.Open(*dir, &pebble.Options{})
	if err != nil {
		return fmt.Errorf("rawpebble: open: %w", err)
	}
	defer db.Close()

	log := cli.NewLogger(stderr, slog.LevelInfo)
	pid := os.Getpid()
	s0, err := readProc(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	lastLog, written := start, 0
	b := db.NewBatch()
	key := make([]byte, 0, 64)
	var val [8]byte
	for i, seed := range seeds {
		for ord := range counts[i] {
			if ord%rawBatch == 0 && ctx.Err() != nil {
				b.Close()
				return ctx.Err()
			}
			key = chaingen.AppendMultihash(key[:0], seed, ord)
			binary.BigEndian.PutUint64(val[:], uint64(i)<<48|ord)
			if err := b.Set(key, val[:], nil); err != nil {
				return err
			}
			if b.Count() >= rawBatch {
				if err := b.Commit(pebble.NoSync); err != nil {
					return fmt.Errorf("rawpebble: commit: %w", err)
				}
				b.Close()
				b = db.NewBatch()
				written += rawBatch
				if time.Since(lastLog) >= *status {
					lastLog = time.Now()
					log.Info("writing", "keys", written)
				}
			}
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("rawpebble: commit: %w", err)
	}
	b.Close()
	wall := time.Since(start)
	s1, err := readProc(pid)
	if err != nil {
		return err
	}
	disk, err := allocated(*dir)
	if err != nil {
		return err
	}
	var total uint64
	for _, n := range counts {
		total += n
	}
	res := rawResult{Figures: Figures{
		Multihashes: total, Wall: wall, CPU: s1.CPU - s0.CPU, RSS: s1.RSS, PeakRSS: s1.HWM,
		Disk: disk, Debt: int64(db.Metrics().Compact.EstimatedDebt),
	}}
	in, rewritten := indexpebble.WriteBytes(db.Metrics())
	res.Figures.BytesIn, res.Figures.BytesRewritten = int64(in), int64(rewritten)

	// Point gets of random multihashes of the chains.
	rng := rand.New(rand.NewPCG(seeds[0], 7))
	keys := make([][]byte, *samples)
	for j := range keys {
		i := rng.IntN(len(seeds))
		keys[j] = chaingen.AppendMultihash(nil, seeds[i], rng.Uint64N(max(counts[i], 1)))
	}
	get := func(k []byte) (bool, error) {
		v, closer, err := db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		ok := len(v) == len(val)
		return ok, closer.Close()
	}
	if res.Seq, err = timeCalls("raw Pebble get, 1 goroutine", keys, 1, get); err != nil {
		return err
	}
	par := append(append([][]byte(nil), keys...), keys...)
	if res.Par, err = timeCalls(fmt.Sprintf("raw Pebble get, %d goroutines", *clients), par, *clients, get); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}

// timeCalls calls f on every key from c goroutines and times each call.
func timeCalls(name string, keys [][]byte, c int, f func([]byte) (bool, error)) (Latency, error) {
	lat := make([]time.Duration, len(keys))
	found := make([]bool, len(keys))
	errs := make([]error, c)
	var next sync.Mutex
	n := 0
	start := time.Now()
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			for {
				next.Lock()
				j := n
				n++
				next.Unlock()
				if j >= len(keys) || errs[w] != nil {
					return
				}
				t := time.Now()
				found[j], errs[w] = f(keys[j])
				lat[j] = time.Since(t)
			}
		})
	}
	wg.Wait()
	l := latencyOf(name, lat, time.Since(start))
	for _, ok := range found {
		if ok {
			l.Found++
		}
	}
	return l, errors.Join(errs...)
}

func parseUints(s string) ([]uint64, error) {
	var out []uint64
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
