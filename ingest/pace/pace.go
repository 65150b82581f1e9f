package pace

import (
	"context"
	"math"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQuiet is how long after the last lookup a [Pacer] keeps pacing
// ingest by default.
const DefaultQuiet = 500 * time.Millisecond

// Config is what a [Pacer] hands out while lookups come. A zero field
// takes its default.
type Config struct {
	// Workers is how many ingest turns are held at once while lookups
	// come (default: GOMAXPROCS minus Compactions minus one, so that a
	// processor stays free for lookups however many publishers are
	// walked at once, but never fewer than the cores). Fewer turns than
	// cores cost ingest more than they bring lookups: on 2 cores, one
	// turn at a time cut ingest to 0.75x and did not lower the finds'
	// latency.
	Workers int
	// Compactions is the most compactions the store runs at once while
	// lookups come (default 1).
	Compactions int
	// Quiet is how long after the last lookup ingest stays paced
	// (default [DefaultQuiet]).
	Quiet time.Duration
	// Nice is the nice value (1 to 19, the higher the lower the
	// priority) of the threads [Pacer.Background] runs ingest on: 0
	// takes [DefaultNice], a negative value leaves them as they are.
	Nice int
}

// DefaultNice is the nice value of the threads [Pacer.Background] runs
// ingest on by default: the kernel gives a runnable thread of lookups
// about ten times the CPU share of one of them. (At 19 ingest lost more
// of its rate to the benchmark's publishers, and finds were no faster.)
const DefaultNice = 10

// Stats are a [Pacer]'s counts since it was made.
type Stats struct {
	// Lookups is the lookups marked, InFlight those running now.
	Lookups  uint64
	InFlight int
	// Turns is the ingest turns handed out; Waits how many of them
	// waited for another to end because lookups came, and Waited the
	// time they waited in all.
	Turns, Waits uint64
	Waited       time.Duration
	// Background is the times [Pacer.Background] lowered a thread (a
	// compaction's table writers call it once per block they write).
	Background uint64
}

// Pacer hands ingest workers their turns and keeps a processor free for
// lookups while they come. It is safe for concurrent use; the zero value
// is not: use [New].
type Pacer struct {
	workers, compactions int
	nice                 int
	quiet                time.Duration
	epoch                time.Time
	now                  func() time.Duration // since epoch; a test's clock

	last     atomic.Int64 // since epoch, of the last lookup's start; -1: none yet
	inFlight atomic.Int64
	lookups  atomic.Uint64
	lowered  atomic.Uint64

	mu     sync.Mutex
	held   int
	wake   chan struct{} // closed when a turn ends
	turns  uint64
	waits  uint64
	waited time.Duration
}

// New returns a Pacer with c's settings.
func New(c Config) *Pacer {
	if c.Compactions <= 0 {
		c.Compactions = 1
	}
	if c.Workers <= 0 {
		c.Workers = max(runtime.NumCPU(), runtime.GOMAXPROCS(0)-c.Compactions-1)
	}
	if c.Quiet <= 0 {
		c.Quiet = DefaultQuiet
	}
	if c.Nice == 0 {
		c.Nice = DefaultNice
	}
	p := &Pacer{workers: c.Workers, compactions: c.Compactions, quiet: c.Quiet, nice: min(c.Nice, 19),
		epoch: time.Now(), wake: make(chan struct{})}
	p.now = func() time.Duration { return time.Since(p.epoch) }
	p.last.Store(-1)
	return p
}

// Procs is the GOMAXPROCS a node that paces its ingest runs with: four
// processors for each core it may use (runtime.NumCPU, or the CPU quota
// Go's runtime found, whichever GOMAXPROCS defaulted to), so that a
// request finds a processor free however many ingest goroutines run,
// and the operating system, which runs a thread that wakes from sleep
// ahead of those that used their share, takes the lookup at once. A
// program sets it with runtime.GOMAXPROCS(pace.Procs()) at start, while
// GOMAXPROCS is still the runtime's default (or right after
// runtime.SetDefaultGOMAXPROCS): Procs multiplies what GOMAXPROCS is
// when it is called. (At 10M multihashes on 2 cores,
// docs/performance.md: one processor more than the cores kept the finds'
// median at 6 ms; four per core brought it to about 2 ms; sixteen per
// core did no better and lengthened the tail.)
func Procs() int { return 4 * runtime.GOMAXPROCS(0) }

// Run runs fn, a piece of ingest's CPU work, in a turn: it takes one
// ([Pacer.Acquire]), runs fn on the caller's goroutine and gives the turn
// back. fn should do CPU work only, not wait on the network. Run returns
// fn's error, or ctx's if ctx ends before fn starts.
func (p *Pacer) Run(ctx context.Context, fn func() error) error {
	if err := p.Acquire(ctx); err != nil {
		return err
	}
	defer p.Release()
	return fn()
}

// Background runs the rest of the calling goroutine below the lookups:
// on Linux it locks the goroutine to its thread and gives the thread
// [Config.Nice], so that the kernel runs the threads of lookups (and of
// everything else) ahead of it whenever both want a core. Call it first
// thing in a goroutine that does ingest work and ends with it (the
// ingester's walks), and never unlock the thread: when the goroutine
// ends, Go ends the thread with it, so no other goroutine ever runs at
// the lowered priority. Elsewhere, or with a negative Config.Nice, it
// does nothing.
//
// A whole walk runs lowered, its fetches and decoding with its entry
// chunks: lowering only the chunks' work (on threads of the pacer's)
// left the finds' median at 3.7 to 4.5 ms where lowering the walks
// brought it to 1.4 to 1.7 ms, at 10M on 2 cores (docs/performance.md).
func (p *Pacer) Background() {
	if p.nice < 0 {
		return
	}
	if lowerThread(p.nice) {
		p.lowered.Add(1)
	}
}

// Lookups wraps h, a handler of lookups, so that each request marks a
// lookup for as long as it runs.
func (p *Pacer) Lookups(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.begin()
		defer p.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// Lookup marks the start of a lookup made otherwise than through
// [Pacer.Lookups]; the returned function marks its end.
func (p *Pacer) Lookup() (end func()) {
	p.begin()
	return func() { p.inFlight.Add(-1) }
}

// begin marks the start of a lookup. The time of the last one is stored
// only when it moved by a millisecond or more: at thousands of lookups a
// second, a store each would move its cache line between the cores for
// nothing, as the quiet time is counted in hundreds of milliseconds.
func (p *Pacer) begin() {
	p.lookups.Add(1)
	p.inFlight.Add(1)
	if now, last := int64(p.now()), p.last.Load(); last < 0 || now-last >= int64(time.Millisecond) {
		p.last.Store(now)
	}
}

// Queried reports whether lookups are running or came within the quiet
// time: while they do, ingest is paced.
func (p *Pacer) Queried() bool {
	if p.inFlight.Load() > 0 {
		return true
	}
	last := p.last.Load()
	return last >= 0 && p.now()-time.Duration(last) < p.quiet
}

// quietIn is how long until the pacer stops pacing if no lookup comes.
func (p *Pacer) quietIn() time.Duration {
	if p.inFlight.Load() > 0 {
		return p.quiet
	}
	return max(time.Duration(p.last.Load())+p.quiet-p.now(), 0)
}

// Acquire takes an ingest turn, waiting while lookups come and every turn
// they allow is held; the caller gives it back with [Pacer.Release] once
// the piece of work is done. A turn should cover CPU work only, not a
// wait on the network or on a lock. Acquire returns ctx's error if ctx
// ends first.
func (p *Pacer) Acquire(ctx context.Context) error {
	p.mu.Lock()
	p.turns++
	if p.held < p.workers || !p.Queried() {
		p.held++
		p.mu.Unlock()
		return nil
	}
	p.waits++
	start := p.now()
	defer func() {
		p.mu.Lock()
		p.waited += p.now() - start
		p.mu.Unlock()
	}()
	for {
		wake := p.wake
		wait := p.quietIn()
		p.mu.Unlock()
		t := time.NewTimer(wait + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-wake:
		case <-t.C:
		}
		t.Stop()
		p.mu.Lock()
		if p.held < p.workers || !p.Queried() {
			p.held++
			p.mu.Unlock()
			return nil
		}
	}
}

// Release gives back a turn taken with [Pacer.Acquire].
func (p *Pacer) Release() {
	p.mu.Lock()
	p.held--
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// CompactionLimit is the most compactions the store may run at once now:
// [Config.Compactions] while lookups come, no limit (math.MaxInt) when
// they do not. store/pebble's WithCompactionLimit takes it.
func (p *Pacer) CompactionLimit() int {
	if p.Queried() {
		return p.compactions
	}
	return math.MaxInt
}

// Stats returns the pacer's counts.
func (p *Pacer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Lookups: p.lookups.Load(), InFlight: int(p.inFlight.Load()),
		Turns: p.turns, Waits: p.waits, Waited: p.waited, Background: p.lowered.Load()}
}
