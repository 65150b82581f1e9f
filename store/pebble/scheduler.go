package pebble

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// threadScheduler is a pebble.CompactionScheduler that grants compactions
// as Pebble's default scheduler does (ConcurrencyLimitScheduler: up to
// the number the database allows without permission, sampled when a
// compaction ends, when Pebble says it may have grown, and every 100 ms)
// and calls onGoroutine on each goroutine of a compaction before that
// goroutine uses the CPU ([WithCompactionThreads]).
//
// Pebble calls a grant handle's MeasureCPU from the compaction's own
// goroutines, first before any significant CPU use: the compaction's
// goroutine, which ends with the compaction, and a goroutine per output
// table that compresses and writes its blocks, which ends with the table.
// That is where onGoroutine runs: once per compaction on the first, and
// at every call on the others (once per block written), since the grant
// cannot tell one table's goroutine from the next.
//
// Its lock ordering is Pebble's: its mutex is taken after the database's,
// and it calls the database's GetWaitingCompaction and Schedule only
// without it held.
type threadScheduler struct {
	onGoroutine func()
	db          pebble.DBForCompaction
	stop, poke  chan struct{}

	mu          sync.Mutex
	running     int
	closed      bool
	granting    bool
	grantingEnd *sync.Cond
	lastAllowed int
}

var _ pebble.CompactionScheduler = (*threadScheduler)(nil)

func newThreadScheduler(onGoroutine func()) *threadScheduler {
	s := &threadScheduler{onGoroutine: onGoroutine, stop: make(chan struct{}), poke: make(chan struct{}, 1)}
	s.grantingEnd = sync.NewCond(&s.mu)
	return s
}

func (s *threadScheduler) Register(_ int, db pebble.DBForCompaction) {
	s.db = db
	go s.periodic()
}

func (s *threadScheduler) Unregister() {
	s.stop <- struct{}{}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for s.granting {
		s.grantingEnd.Wait()
	}
}

func (s *threadScheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, nil
	}
	s.lastAllowed = s.db.GetAllowedWithoutPermission()
	if s.lastAllowed > s.running {
		s.running++
		return true, &grant{s: s}
	}
	return false, nil
}

func (s *threadScheduler) UpdateGetAllowedWithoutPermission() {
	s.mu.Lock()
	allowed := s.db.GetAllowedWithoutPermission()
	more := allowed > s.lastAllowed
	s.lastAllowed = allowed
	s.mu.Unlock()
	if more {
		select {
		case s.poke <- struct{}{}:
		default:
		}
	}
}

// done ends a compaction and grants what may run in its place.
func (s *threadScheduler) done() {
	s.mu.Lock()
	s.running--
	s.grantLockedAndUnlock()
}

// grantLockedAndUnlock grants waiting compactions up to what the database
// allows, one granter at a time. It is called with mu held and returns
// with it released.
func (s *threadScheduler) grantLockedAndUnlock() {
	defer s.mu.Unlock()
	for s.granting {
		s.grantingEnd.Wait()
	}
	if s.closed {
		return
	}
	s.lastAllowed = s.db.GetAllowedWithoutPermission()
	n := s.lastAllowed - s.running
	if n <= 0 {
		return
	}
	s.granting = true
	s.mu.Unlock()
	for ; n > 0; n-- {
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting {
			break
		}
		if !s.db.Schedule(&grant{s: s}) {
			break
		}
		s.mu.Lock()
		s.running++
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.granting = false
	s.grantingEnd.Broadcast()
}

func (s *threadScheduler) periodic() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.poke:
		case <-s.stop:
			return
		}
		s.mu.Lock()
		s.grantLockedAndUnlock()
	}
}

// grant is the handle of one granted compaction.
type grant struct {
	s       *threadScheduler
	primary sync.Once
}

func (g *grant) Started() {}

func (g *grant) MeasureCPU(kind pebble.CompactionGoroutineKind) {
	if kind == pebble.CompactionGoroutinePrimary {
		g.primary.Do(g.s.onGoroutine)
		return
	}
	g.s.onGoroutine()
}

func (g *grant) CumulativeStats(pebble.CompactionGrantHandleStats) {}

func (g *grant) Done() { g.s.done() }
