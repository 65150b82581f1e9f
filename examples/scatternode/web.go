package scatternode

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"sync/atomic"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/web"
)

// Stats are the front end's lookup counters since New, across reloads.
type Stats struct {
	// Lookups counts the multihashes looked up through the front end's
	// backends (one per GET find, one per multihash of a batch, cache
	// hits included); Partial those of them that ended without an answer
	// from every backend asked.
	Lookups, Partial uint64
}

// Stats returns the front end's lookup counters.
func (s *Scatter) Stats() Stats {
	return Stats{Lookups: s.lookups.Load(), Partial: s.partial.Load()}
}

// handler is the find listener's handler: one mux, one mount per API.
func (s *Scatter) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", s.front)             // the IPNI find API (scatter/find), swapped by Reload
	mux.Handle("/{$}", web.Page())       // the page for people (scatter/web): every method, for OPTIONS
	mux.Handle("/status.json", s.status) // the page's JSON status (scatter/web)
	mux.Handle("/health", s.conv)        // scatter/find/health: every method, for OPTIONS
	mux.Handle("/stats", s.conv)         // the sums of the backends' /stats
	mux.HandleFunc("GET "+keyspace.PathStatus, s.shardStatus)
	return mux
}

// shardStatus serves GET keyspace.PathStatus: the front end's role and the
// epoch of the layout it reads by (0 without one), which a
// keyspace.Coordinator waits for before it publishes the next epoch.
func (s *Scatter) shardStatus(w http.ResponseWriter, r *http.Request) {
	st := s.Status()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(st)
}

// Status is the front end's keyspace status: Role keyspace.RoleFront and
// the epoch of the layout it reads by (0 without one), what it serves at
// keyspace.PathStatus and what a program writes under its presence key.
func (s *Scatter) Status() keyspace.Status {
	return keyspace.Status{Role: keyspace.RoleFront, Epoch: s.Config().epoch()}
}

// newStatus builds the status endpoint over the front end's current
// configuration and counters, and the assigner's state API when
// assignerURL is set.
func (s *Scatter) newStatus(assignerURL string) (*web.Status, error) {
	return web.NewStatus(s.local, web.WithHTTPClient(s.client), web.WithAssigner(assignerURL))
}

// local describes the front end to its status endpoint.
func (s *Scatter) local() web.Local {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	st := cur.gather.Stats()
	l := web.Local{Backends: cur.cfg.Backends, Lookups: s.lookups.Load(), Partial: s.partial.Load()}
	for _, b := range st.Backends {
		l.Breakers = append(l.Breakers, b.State.String())
	}
	return l
}

// countingBackend counts the lookups of the find handler into the front
// end's counters, which outlive each Gather.
//
// With a fence (Config.Fenced), a lookup that ends without error while
// the front end is fenced, at its start or its end, ends instead with a
// *find.PartialError wrapping ErrFenced.
type countingBackend struct {
	find.Backend
	lookups, partial *atomic.Uint64
	fenced           func() bool // nil: never
}

// errFenced is the error a fenced lookup ends with: no backend's answer
// counts as complete.
func errFenced() error {
	return &find.PartialError{Answered: 0, Total: 1, Err: ErrFenced}
}

func (c countingBackend) isFenced() bool { return c.fenced != nil && c.fenced() }

func (c countingBackend) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	seq := c.Backend.Find(ctx, mh)
	return func(yield func(find.ProviderResult, error) bool) {
		c.lookups.Add(1)
		fenced := c.isFenced()
		failed := false
		for pr, err := range seq {
			if err != nil {
				failed = true
				if _, ok := errors.AsType[*find.PartialError](err); ok {
					c.partial.Add(1)
				}
			}
			if !yield(pr, err) {
				return
			}
		}
		if !failed && (fenced || c.isFenced()) {
			c.partial.Add(1)
			yield(find.ProviderResult{}, errFenced())
		}
	}
}

// FindBatch lets a batch lookup reach the Gather's own FindBatch (which,
// with a ring, splits it by owner), counting each multihash.
func (c countingBackend) FindBatch(ctx context.Context, mhs []multihash.Multihash) []find.BatchResult {
	bf, ok := c.Backend.(find.BatchFinder)
	if !ok {
		return find.FindEach(ctx, c, mhs)
	}
	fenced := c.isFenced()
	out := bf.FindBatch(ctx, mhs)
	c.lookups.Add(uint64(len(mhs)))
	fenced = fenced || c.isFenced()
	for i, a := range out {
		if a.Err == nil && fenced {
			out[i].Err = errFenced()
		}
		if _, ok := errors.AsType[*find.PartialError](out[i].Err); ok {
			c.partial.Add(1)
		}
	}
	return out
}
