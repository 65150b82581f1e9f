package ingest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/pace"
	"github.com/indexkit/indexkit/store/memory"
)

// countingPacer is a pace.Pacer that counts the pieces of work run and
// the most running at once.
type countingPacer struct {
	*pace.Pacer
	mu              sync.Mutex
	held, most, ran int
}

func (c *countingPacer) Run(ctx context.Context, fn func() error) error {
	return c.Pacer.Run(ctx, func() error {
		c.mu.Lock()
		c.held++
		c.ran++
		c.most = max(c.most, c.held)
		c.mu.Unlock()
		// The work takes a while, so that the walkers' turns would
		// overlap if the pacer let them.
		time.Sleep(time.Millisecond)
		err := fn()
		c.mu.Lock()
		c.held--
		c.mu.Unlock()
		return err
	})
}

// While a lookup runs, the walkers of several publishers take turns to
// decode and store their entry chunks: one at a time with a pacer of one
// worker, and every publisher ingested in full.
func TestPacerTurnsPerChunk(t *testing.T) {
	st := memory.New()
	defer st.Close()
	srcs := newSources()
	var chains []*chaingen.Chain
	chunks := 0
	for seed := range uint64(4) {
		c := generate(t, chaingen.Config{Seed: 300 + seed, Ads: 10, MhsPerAd: 30, ChunkSize: 7})
		chains = append(chains, c)
		srcs.set(c.Publisher, c.Source())
		chunks += 10 * 5 // 30 multihashes in chunks of 7
	}
	p := &countingPacer{Pacer: pace.New(pace.Config{Workers: 1, Compactions: 1, Quiet: 1 << 40})}
	endLookup := p.Lookup() // held for the whole test: ingest stays paced
	defer endLookup()
	runToHeads(t, newIngester(t, st, newDS(), srcs, ingest.WithWorkers(4), ingest.WithPacer(p)), chains)
	for _, c := range chains {
		equalModel(t, c.Model(), providerView{st, c.Provider})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ran < chunks || p.held != 0 {
		t.Errorf("%d pieces of work run, %d running: want one per entry chunk (%d), none left running", p.ran, p.held, chunks)
	}
	if p.most != 1 {
		t.Errorf("at most %d pieces of work ran at once while a lookup ran, want 1", p.most)
	}
	if stt := p.Stats(); stt.Waits == 0 || stt.Turns != uint64(p.ran) {
		t.Errorf("pacer stats %+v: want a turn per piece of work (%d), and some waiting with 4 walking and 1 turn", stt, p.ran)
	}
}
