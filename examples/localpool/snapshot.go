package localpool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/scatter/find/health"
)

// Snapshot is the pool as its roles report it at one moment: what the
// demo's view shows and what tests wait on. A role that does not answer
// is reported with Up false (or Err set), not as an error.
type Snapshot struct {
	Time       time.Time
	Indexers   []IndexerState
	Publishers []PublisherState
	// Handoffs are the handoffs seen: done ones (an indexer holds a
	// publisher with Continued set) and, when the assigner answers,
	// incomplete ones (Done false).
	Handoffs []Handoff
	// AssignerUp reports whether the assigner's state API answered.
	AssignerUp bool
}

// IndexerState is one indexer, from its admin API (GET /status,
// /ingest/assigned, /ingest/status), its find API (GET /stats) and its
// data directory.
type IndexerState struct {
	Name string
	// Up: its admin API answered.
	Up     bool
	ID     string // peer ID
	Frozen bool
	// Usage is its disk usage in percent of its budget (−1: unknown);
	// DiskBytes the bytes allocated to the files under its data
	// directory; Budget its -disk-budget.
	Usage     float64
	DiskBytes int64
	Budget    int64
	// Publishers are the publishers assigned to it.
	Publishers []Held
	// Multihashes is the multihashes its store holds, from its find
	// API's GET /stats (EntriesCount): the number the front end's page
	// shows for it. MultihashesExact says whether it is an exact count
	// (EntriesExact) or the store's estimate, which the view labels
	// "about".
	Multihashes      uint64
	MultihashesExact bool
	// Indexed is the sum of its publishers' EntriesIndexed: the
	// multihashes its walks applied since its last start (removals and
	// repeats included).
	Indexed uint64
	Err     string `json:",omitempty"`
}

// Held is a publisher assigned to an indexer, with its walk.
type Held struct {
	Publisher string // peer ID
	// Continued is the frozen indexer (role name, or peer ID if unknown)
	// this assignment took over by a handoff; "" otherwise.
	Continued  string `json:",omitempty"`
	LastHead   string `json:",omitempty"`
	AdsApplied uint64
}

// PublisherState is one generated publisher, from its GET /truth and the
// indexers' assignments.
type PublisherState struct {
	Name  string // publisher-<i> or malicious-<i>
	ID    string // peer ID ("" when its /truth did not answer)
	Fault string `json:",omitempty"`
	// Head and Ads are its head and ad count; Multihashes the multihashes
	// its ground truth holds.
	Head        string
	Ads         int
	Multihashes int
	// Owners are the active (not frozen) indexers holding it; Frozen the
	// frozen ones.
	Owners, Frozen []string
	// Lag is how many ads its owners (the most advanced one) have not
	// walked yet: 0 when one's last walk reached the head; −1 when
	// unknown (no owner, or a head the pool did not see the publisher
	// serve: heads are recorded at each Snapshot and Truth).
	Lag int
	Err string `json:",omitempty"`
}

// Handoff is a publisher moved from a frozen indexer to an active one.
type Handoff struct {
	Publisher string // peer ID
	From, To  string // role names; To "" while it waits for a receiver
	Done      bool
	// Waiting is why an incomplete handoff waits (assigner.Reason).
	Waiting string `json:",omitempty"`
}

// Pending returns the incomplete handoffs of s.
func (s *Snapshot) Pending() []Handoff {
	var out []Handoff
	for _, h := range s.Handoffs {
		if !h.Done {
			out = append(out, h)
		}
	}
	return out
}

// Indexer returns the state of the indexer named name, or nil.
func (s *Snapshot) Indexer(name string) *IndexerState {
	for i := range s.Indexers {
		if s.Indexers[i].Name == name {
			return &s.Indexers[i]
		}
	}
	return nil
}

// headLog records the heads publishers served with their ad counts, to
// tell how far behind an indexer's last head is.
type headLog struct {
	mu    sync.Mutex
	heads map[string]map[string]int // publisher → head → ads
}

// maxHeads bounds the heads kept per publisher.
const maxHeads = 100_000

func (h *headLog) add(t publishernode.Truth) {
	if t.Head == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.heads == nil {
		h.heads = map[string]map[string]int{}
	}
	m := h.heads[t.Publisher]
	if m == nil || len(m) >= maxHeads {
		m = map[string]int{}
		h.heads[t.Publisher] = m
	}
	m[t.Head] = t.Ads
}

func (h *headLog) ads(publisher, head string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.heads[publisher][head]
	return n, ok
}

// publisherURLs returns (name, base URL) of every publisher, honest first.
func (p *Pool) publisherURLs() (names, urls []string) {
	u := p.URLs()
	for i, x := range u.Publishers {
		names, urls = append(names, "publisher-"+strconv.Itoa(i)), append(urls, x)
	}
	for i, x := range u.Malicious {
		names, urls = append(names, MaliciousName(i)), append(urls, x)
	}
	return names, urls
}

// truth GETs one publisher's /truth, recording its head.
func (p *Pool) truth(ctx context.Context, base string, entries bool) (publishernode.Truth, error) {
	var t publishernode.Truth
	u := base + "/truth"
	if entries {
		u += "?entries=1"
	}
	if err := p.getJSON(ctx, u, &t); err != nil {
		return t, err
	}
	p.heads.add(t)
	return t, nil
}

// Snapshot reads the state of every role concurrently, each request
// bounded by ctx.
func (p *Pool) Snapshot(ctx context.Context) (*Snapshot, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("snapshot: %w", ErrClosed)
	}
	p.mu.Unlock()
	s := &Snapshot{Time: time.Now()}
	urls := p.URLs()
	pubNames, pubURLs := p.publisherURLs()
	s.Indexers = make([]IndexerState, len(urls.Indexers))
	s.Publishers = make([]PublisherState, len(pubURLs))
	statuses := make([]map[string]admin.PublisherStatus, len(urls.Indexers))
	var as assigner.Assignments
	var wg sync.WaitGroup
	for i, ix := range urls.Indexers {
		wg.Go(func() { statuses[i] = p.indexerState(ctx, ix, &s.Indexers[i]) })
	}
	for i, u := range pubURLs {
		wg.Go(func() {
			ps := &s.Publishers[i]
			ps.Name, ps.Lag = pubNames[i], -1
			t, err := p.truth(ctx, u, false)
			if err != nil {
				ps.Err = err.Error()
				return
			}
			ps.ID, ps.Fault, ps.Head, ps.Ads, ps.Multihashes = t.Publisher, string(t.Fault), t.Head, t.Ads, t.Multihashes
		})
	}
	wg.Go(func() { s.AssignerUp = p.getJSON(ctx, urls.AssignerState+"/assignments", &as) == nil })
	wg.Wait()

	// Who holds what, and the handoffs done.
	names := map[string]string{} // peer ID → role name
	for _, ix := range s.Indexers {
		if ix.ID != "" {
			names[ix.ID] = ix.Name
		}
	}
	nameOf := func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		return id
	}
	for i := range s.Indexers {
		for j := range s.Indexers[i].Publishers {
			h := &s.Indexers[i].Publishers[j]
			if h.Continued != "" {
				h.Continued = nameOf(h.Continued)
				s.Handoffs = append(s.Handoffs, Handoff{Publisher: h.Publisher, From: h.Continued, To: s.Indexers[i].Name, Done: true})
			}
		}
	}
	for _, h := range as.Handoffs {
		s.Handoffs = append(s.Handoffs, Handoff{Publisher: h.Publisher.String(), From: h.From, To: h.To, Waiting: string(h.Waiting)})
	}
	for i := range s.Publishers {
		ps := &s.Publishers[i]
		if ps.ID == "" {
			continue
		}
		for k, ix := range s.Indexers {
			held := slices.ContainsFunc(ix.Publishers, func(h Held) bool { return h.Publisher == ps.ID })
			if !held {
				continue
			}
			if ix.Frozen {
				ps.Frozen = append(ps.Frozen, ix.Name)
				continue
			}
			ps.Owners = append(ps.Owners, ix.Name)
			st, ok := statuses[k][ps.ID]
			var last string
			if ok && st.LastHead.Defined() {
				last = st.LastHead.String()
			}
			lag := -1
			switch {
			case last == ps.Head:
				lag = 0
			case last == "":
				lag = ps.Ads
			default:
				if n, ok := p.heads.ads(ps.ID, last); ok {
					lag = max(0, ps.Ads-n)
				}
			}
			if lag >= 0 && (ps.Lag < 0 || lag < ps.Lag) {
				ps.Lag = lag
			}
		}
	}
	return s, nil
}

// indexerState fills st for one indexer and returns its publishers'
// walk statuses by peer ID.
func (p *Pool) indexerState(ctx context.Context, ix IndexerURLs, st *IndexerState) map[string]admin.PublisherStatus {
	st.Name, st.Usage = ix.Name, -1
	st.Budget = p.cfg.DiskBudget
	if ix.Name == IndexerName(0) && p.cfg.FreezeBudget > 0 {
		st.Budget = p.cfg.FreezeBudget
	}
	st.DiskBytes = dirSize(p.Dir(ix.Name))
	c, err := admin.NewClient(ix.Admin, admin.WithHTTPClient(p.hc), admin.WithClientToken(p.token))
	if err != nil {
		st.Err = err.Error()
		return nil
	}
	status, err := c.Status(ctx)
	if err != nil {
		st.Err = err.Error()
		return nil
	}
	st.Up, st.ID, st.Frozen, st.Usage = true, status.ID.String(), status.Frozen, status.Usage
	var stats health.Stats
	if err := p.getJSON(ctx, ix.Find+"/stats", &stats); err != nil {
		st.Err = err.Error()
	} else {
		st.Multihashes, st.MultihashesExact = uint64(max(stats.EntriesCount, 0)), stats.EntriesExact
	}
	assigned, err := c.Assigned(ctx)
	if err != nil && st.Err == "" {
		st.Err = err.Error()
	}
	walks, err := c.IngestStatus(ctx)
	if err != nil && st.Err == "" {
		st.Err = err.Error()
	}
	byID := make(map[string]admin.PublisherStatus, len(walks))
	for _, w := range walks {
		byID[w.Publisher.String()] = w
		st.Indexed += w.EntriesIndexed
	}
	for _, a := range assigned {
		h := Held{Publisher: a.Publisher.String()}
		if a.Continued != "" {
			h.Continued = a.Continued.String()
		}
		if w, ok := byID[h.Publisher]; ok {
			h.AdsApplied = w.AdsApplied
			if w.LastHead.Defined() {
				h.LastHead = w.LastHead.String()
			}
		}
		st.Publishers = append(st.Publishers, h)
	}
	slices.SortFunc(st.Publishers, func(a, b Held) int { return strings.Compare(a.Publisher, b.Publisher) })
	return byID
}

// dirSize is the bytes allocated to the regular files under dir (0 if
// none), as the node's budget counts them ([freeze.Budget]).
func dirSize(dir string) int64 {
	used, _, _ := freeze.Budget(dir, 0).Usage(dir)
	return int64(used)
}

// WaitFor takes a Snapshot every 250 ms until cond holds of one, which it
// returns, or until ctx is done (then the error names what and the last
// snapshot's error, if any).
func (p *Pool) WaitFor(ctx context.Context, what string, cond func(*Snapshot) bool) (*Snapshot, error) {
	for {
		s, err := p.Snapshot(ctx)
		if err == nil && cond(s) {
			return s, nil
		}
		if errors.Is(err, ErrClosed) {
			return nil, fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
