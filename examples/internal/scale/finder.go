package scale

// The finder child: lookups at a steady rate during ingest, from a process
// of their own.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/chaingen"
)

// finderConns is how many keep-alive connections the finder keeps: the
// most lookups it has in flight at once.
const finderConns = 64

// finderArgs are the finder child's arguments: lookups of pubs' chains
// at c.ProbeRate a second on findURL.
func finderArgs(c Config, findURL string, pubs []*publisher) []string {
	seeds := make([]string, len(pubs))
	provs := make([]string, len(pubs))
	for i, p := range pubs {
		seeds[i] = strconv.FormatUint(c.chainConfig(i).Seed, 10)
		provs[i] = p.chain.Provider.String()
	}
	return []string{"finder", "-url", findURL, "-seeds", strings.Join(seeds, ","),
		"-providers", strings.Join(provs, ","), "-rate", strconv.FormatFloat(c.ProbeRate, 'f', -1, 64),
		"-seed", strconv.FormatUint(c.Seed, 10)}
}

// finder is a running finder child: the parent tells it, on its standard
// input, how many multihashes of each chain the node has indexed, and
// closes it to stop the lookups.
type finder struct {
	*child
	in   io.WriteCloser
	name string
}

// startFinder starts the finder child.
func startFinder(c Config, node, logFile, findURL string, pubs []*publisher) (*finder, error) {
	pr, pw := io.Pipe()
	ch, err := startChildIn(c, "finder", logFile, pr, true, nil, finderArgs(c, findURL, pubs)...)
	if err != nil {
		pw.Close()
		return nil, err
	}
	return &finder{child: ch, in: pw,
		name: fmt.Sprintf("%s, during ingest, %.0f/s steady from another process", node, c.ProbeRate)}, nil
}

// indexed sends the finder the multihashes indexed per chain. A finder
// that has exited drops them.
func (f *finder) indexed(counts []atomic.Uint64) {
	var b strings.Builder
	for i := range counts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(counts[i].Load(), 10))
	}
	b.WriteByte('\n')
	if !f.exited() {
		io.WriteString(f.in, b.String()) //nolint:errcheck // its exit is reported by finish
	}
}

// finish stops the lookups and returns their timing.
func (f *finder) finish(ctx context.Context) (Latency, error) {
	f.in.Close()
	select {
	case <-f.done:
	case <-ctx.Done():
		f.stop()
		return Latency{}, ctx.Err()
	}
	if f.err != nil {
		return Latency{}, fmt.Errorf("finder: %w", f.err)
	}
	var l Latency
	if err := json.Unmarshal(f.out.Bytes(), &l); err != nil {
		return Latency{}, fmt.Errorf("finder: its result: %w", err)
	}
	l.Name = f.name
	return l, nil
}

// finderMain is the finder child. It sends lookups of multihashes the
// node has indexed (by the counts read from standard input, one line of
// comma-separated counts per update) at -rate a second on a fixed
// schedule, whatever the answers' latency (an open loop, as real clients
// are), from finderConns senders, each on a connection of its own and
// with every finderConns-th slot of the schedule. A lookup's latency
// counts from its slot, so that a slow node is not hidden by lookups sent
// late: a sender still waiting for its previous answer when its next slot
// comes counts that lookup from the slot. What the finder itself adds is
// not counted: a sender whose timer woke it after its slot (Go's timers on
// Linux sleep in whole milliseconds of epoll_wait, so a wake-up is up to a
// millisecond late, half of one on average, before the finder's threads
// wait for the two shared cores) counts from when it woke. That lateness
// is reported apart, as Latency.Late. It stops when standard input closes
// and prints the timing as JSON.
func finderMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("finder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	findURL := fs.String("url", "", "the node's find `URL`")
	seedsFlag := fs.String("seeds", "", "comma-separated chain seeds")
	provsFlag := fs.String("providers", "", "comma-separated provider IDs, one per seed")
	rate := fs.Float64("rate", DefaultProbeRate, "lookups a second")
	seed := fs.Uint64("seed", 1, "seed of the lookups' choice")
	if err := fs.Parse(args); err != nil {
		return err
	}
	seeds, err := parseUints(*seedsFlag)
	provs := strings.Split(*provsFlag, ",")
	if err != nil || len(seeds) == 0 || len(provs) != len(seeds) || *findURL == "" || *rate <= 0 {
		return fmt.Errorf("finder: want -url, a positive -rate and as many -providers as -seeds (%v)", err)
	}

	counts := make([]atomic.Uint64, len(seeds))
	stop := make(chan struct{})
	go func() {
		defer close(stop)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			ns, err := parseUints(sc.Text())
			if err != nil || len(ns) != len(counts) {
				continue
			}
			for i, n := range ns {
				counts[i].Store(n)
			}
		}
	}()

	hc := keepAliveClient(finderConns)
	defer hc.CloseIdleConnections()
	var (
		mu    sync.Mutex
		lat   []time.Duration
		late  []time.Duration
		found int
		sent  int
		first time.Time
		errs  []error
	)
	every := time.Duration(float64(time.Second) / *rate)
	start := time.Now()
	due := make(chan time.Time) // a slot already due: no wait
	close(due)
	var wg sync.WaitGroup
	for k := range finderConns {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(*seed, 17+uint64(k)))
			key := make([]byte, 0, 64)
			t := time.NewTimer(time.Hour)
			defer t.Stop()
			for slot := start.Add(time.Duration(k) * every); ; slot = slot.Add(finderConns * every) {
				var wake <-chan time.Time = due
				if d := time.Until(slot); d > 0 {
					t.Reset(d)
					wake = t.C
				}
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-wake:
				}
				from := slot
				if now := time.Now(); wake != due && now.After(slot) {
					from = now // the timer woke late: the finder's delay, not the node's
				}
				i := rng.IntN(len(seeds))
				n := counts[i].Load()
				if n == 0 {
					continue // nothing of this chain is indexed yet
				}
				key = chaingen.AppendMultihash(key[:0], seeds[i], rng.Uint64N(n))
				ok, err := find(ctx, hc, *findURL, sample{multihash.Multihash(key), provs[i]})
				d := time.Since(from)
				mu.Lock()
				sent++
				if first.IsZero() || slot.Before(first) {
					first = slot
				}
				if err != nil {
					if len(errs) < 5 {
						errs = append(errs, err)
					}
				} else {
					lat = append(lat, d)
					late = append(late, from.Sub(slot))
					if ok {
						found++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(errs) > 0 {
		return fmt.Errorf("finder: %d of %d lookups failed: %w", sent-len(lat), sent, errors.Join(errs...))
	}
	wall := time.Duration(0)
	if !first.IsZero() {
		wall = time.Since(first)
	}
	l := latencyOf("", lat, wall)
	l.Found = found
	if len(late) > 0 {
		l.Late = new(Late)
		l.Late.P50, l.Late.P99 = percentiles(late)
	}
	return json.NewEncoder(stdout).Encode(l)
}
