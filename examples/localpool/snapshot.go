package localpool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/assigner/admin"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/scatter/find"
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
// /ingest/assigned, /ingest/status) and its data directory.
type IndexerState struct {
	Name string
	// Up: its admin API answered.
	Up     bool
	ID     string // peer ID
	Frozen bool
	// Usage is its disk usage in percent of its budget (−1: unknown);
	// DiskBytes the size of the files under its data directory; Budget
	// its -disk-budget.
	Usage     float64
	DiskBytes int64
	Budget    int64
	// Publishers are the publishers assigned to it.
	Publishers []Held
	// Multihashes is the sum of its publishers' EntriesIndexed: the
	// multihashes it indexed since its last start.
	Multihashes uint64
	Err         string `json:",omitempty"`
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
	assigned, err := c.Assigned(ctx)
	if err != nil {
		st.Err = err.Error()
	}
	walks, err := c.IngestStatus(ctx)
	if err != nil && st.Err == "" {
		st.Err = err.Error()
	}
	byID := make(map[string]admin.PublisherStatus, len(walks))
	for _, w := range walks {
		byID[w.Publisher.String()] = w
		st.Multihashes += w.EntriesIndexed
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

// dirSize is the size of the regular files under dir (0 if none).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
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

// Truth is the ground truth of the pool's honest publishers at the
// moment each was asked: what the front end must answer, and nothing
// else. The faulty publishers' truth is empty by definition (nothing
// they publish may be indexed), so it is not listed.
type Truth struct {
	// Publishers are each honest publisher's truth with its entries.
	Publishers []publishernode.Truth
	// Entries is the union of their entries, sorted by multihash.
	Entries []publishernode.Entry
}

// Digest is publishernode.Digest of the entries.
func (t Truth) Digest() string { return publishernode.Digest(t.Entries) }

// Truth asks every honest publisher for its GET /truth?entries=1. The
// publishers keep publishing, so wait for the indexers on a pool whose
// Config.MaxAds has been reached, or accept that the truth moves.
func (p *Pool) Truth(ctx context.Context) (Truth, error) {
	var t Truth
	for i, u := range p.URLs().Publishers {
		pt, err := p.truth(ctx, u, true)
		if err != nil {
			return t, fmt.Errorf("truth of publisher-%d: %w", i, err)
		}
		t.Publishers = append(t.Publishers, pt)
	}
	byMH := map[string]int{}
	for _, pt := range t.Publishers {
		for _, e := range pt.Entries {
			if i, ok := byMH[e.Multihash]; ok {
				t.Entries[i].Values = append(t.Entries[i].Values, e.Values...)
				continue
			}
			byMH[e.Multihash] = len(t.Entries)
			t.Entries = append(t.Entries, publishernode.Entry{Multihash: e.Multihash, Values: slices.Clone(e.Values)})
		}
	}
	// Sort by multihash bytes, each decoded once (decoding base58 in the
	// comparator made a long run's truth take seconds to sort).
	keys := make(map[string]string, len(t.Entries))
	for _, e := range t.Entries {
		mh, _ := multihash.FromB58String(e.Multihash)
		keys[e.Multihash] = string(mh)
	}
	slices.SortFunc(t.Entries, func(a, b publishernode.Entry) int {
		return strings.Compare(keys[a.Multihash], keys[b.Multihash])
	})
	return t, nil
}

// HaltPublishers asks every honest publisher to publish no more ads (POST
// /halt); they keep serving, so [Pool.Truth] stops moving and a check
// after the indexers caught up compares against a still truth. Used by a
// demo's final check; there is no resume.
func (p *Pool) HaltPublishers(ctx context.Context) error {
	var errs []error
	for i, u := range p.URLs().Publishers {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"/halt", nil)
		if err != nil {
			return err
		}
		resp, err := p.hc.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("halt publisher-%d: %w", i, err))
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			errs = append(errs, fmt.Errorf("halt publisher-%d: %s", i, resp.Status))
		}
	}
	return errors.Join(errs...)
}

// Check is the result of asking the front end for a set of multihashes
// and comparing each answer with the truth.
type Check struct {
	// Multihashes is how many were asked; Complete how many were
	// answered with exactly their true values (each once).
	Multihashes, Complete int
	// Missing counts true values absent from the answers; Extra values
	// answered that are not true (stale or foreign); Duplicates values
	// answered more than once.
	Missing, Extra, Duplicates int
	// Partial counts answers marked partial (X-IPNI-Backends: some
	// backend did not answer), complete or not.
	Partial int
	// Failed counts queries that got no usable answer (a network error
	// or a status other than 200 and 404).
	Failed int
	// Examples describe up to five incomplete answers.
	Examples []string
}

// OK reports whether every multihash was answered in full, with nothing
// extra or duplicated.
func (c Check) OK() bool {
	return c.Complete == c.Multihashes && c.Extra == 0 && c.Duplicates == 0 && c.Failed == 0
}

func (c Check) String() string {
	return fmt.Sprintf("%d/%d complete, %d values missing, %d extra, %d duplicated, %d partial, %d failed",
		c.Complete, c.Multihashes, c.Missing, c.Extra, c.Duplicates, c.Partial, c.Failed)
}

// checkConcurrency bounds the queries of a Check in flight.
const checkConcurrency = 8

// Check asks the front end (GET /multihash/{mh}) for every entry and
// compares each answer with the entry's values: provider, context ID and
// metadata.
func (p *Pool) Check(ctx context.Context, entries []publishernode.Entry) Check {
	return p.checkAt(ctx, p.URLs().Find, entries)
}

// CheckIndexer is [Pool.Check] against one indexer's own find API.
func (p *Pool) CheckIndexer(ctx context.Context, name string, entries []publishernode.Entry) Check {
	for _, ix := range p.URLs().Indexers {
		if ix.Name == name {
			return p.checkAt(ctx, ix.Find, entries)
		}
	}
	return Check{Multihashes: len(entries), Failed: len(entries), Examples: []string{"no indexer " + name}}
}

func (p *Pool) checkAt(ctx context.Context, base string, entries []publishernode.Entry) Check {
	var mu sync.Mutex
	c := Check{Multihashes: len(entries)}
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	for _, e := range entries {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			got, partial, err := p.find(ctx, base, e.Multihash)
			missing, extra, dup := compare(e.Values, got)
			mu.Lock()
			defer mu.Unlock()
			if partial {
				c.Partial++
			}
			var problem string
			switch {
			case err != nil:
				c.Failed++
				problem = err.Error()
			case missing+extra+dup == 0:
				c.Complete++
				return
			default:
				c.Missing += missing
				c.Extra += extra
				c.Duplicates += dup
				problem = fmt.Sprintf("%d of %d values missing, %d extra, %d duplicated", missing, len(e.Values), extra, dup)
			}
			if len(c.Examples) < 5 {
				c.Examples = append(c.Examples, e.Multihash+": "+problem)
			}
		})
	}
	wg.Wait()
	return c
}

// value is a comparable (provider, context, metadata).
type value struct{ provider, context, metadata string }

func compare(want []publishernode.Value, got []value) (missing, extra, dup int) {
	w := map[value]bool{}
	for _, v := range want {
		w[value{v.ProviderID, string(v.ContextID), string(v.Metadata)}] = true
	}
	seen := map[value]bool{}
	for _, v := range got {
		switch {
		case seen[v]:
			dup++
		case !w[v]:
			extra++
		}
		seen[v] = true
	}
	for v := range w {
		if !seen[v] {
			missing++
		}
	}
	return missing, extra, dup
}

// find asks base's find API for mh (base58); a 404 is no values.
func (p *Pool) find(ctx context.Context, base, mh string) (vals []value, partial bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/multihash/"+mh, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	partial = resp.Header.Get("X-IPNI-Backends") != ""
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil, partial, nil
	case http.StatusOK:
	default:
		return nil, partial, fmt.Errorf("GET %s/multihash/%s: %s", base, mh, resp.Status)
	}
	var fr find.FindResponse
	if err := decodeJSON(resp, &fr); err != nil {
		return nil, partial, fmt.Errorf("GET %s/multihash/%s: %w", base, mh, err)
	}
	for _, r := range fr.MultihashResults {
		for _, pr := range r.ProviderResults {
			var id peer.ID
			if pr.Provider != nil {
				id = pr.Provider.ID
			}
			vals = append(vals, value{id.String(), string(pr.ContextID), string(pr.Metadata)})
		}
	}
	return vals, partial, nil
}

// Probe is one multihash asked of the front end and of every indexer.
type Probe struct {
	Multihash string
	Publisher string // the provider of its first true value
	// Want is the number of true values; Got how many of them the front
	// end answered; Complete: all of them and nothing else.
	Want, Got int
	Complete  bool
	Partial   bool
	// HeldBy are the indexers whose own find API answered it.
	HeldBy []string
	Err    string `json:",omitempty"`
}

// Probe asks the front end and every running indexer for e's multihash.
func (p *Pool) Probe(ctx context.Context, e publishernode.Entry) Probe {
	pr := Probe{Multihash: e.Multihash, Want: len(e.Values)}
	if len(e.Values) > 0 {
		pr.Publisher = e.Values[0].ProviderID
	}
	urls := p.URLs()
	held := make([]bool, len(urls.Indexers))
	var wg sync.WaitGroup
	for i, ix := range urls.Indexers {
		wg.Go(func() {
			got, _, err := p.find(ctx, ix.Find, e.Multihash)
			held[i] = err == nil && len(got) > 0
		})
	}
	got, partial, err := p.find(ctx, urls.Find, e.Multihash)
	wg.Wait()
	for i, h := range held {
		if h {
			pr.HeldBy = append(pr.HeldBy, urls.Indexers[i].Name)
		}
	}
	pr.Partial = partial
	if err != nil {
		pr.Err = err.Error()
		return pr
	}
	missing, extra, dup := compare(e.Values, got)
	pr.Got = pr.Want - missing
	pr.Complete = missing+extra+dup == 0
	return pr
}

// WaitComplete waits until the front end answers every multihash of the
// honest publishers' truth in full (see [Check.OK]), asking again every
// 500 ms, and returns the last check. A truth with no multihash does not
// count as complete.
func (p *Pool) WaitComplete(ctx context.Context) (Check, error) {
	var last Check
	for {
		t, err := p.Truth(ctx)
		if err == nil {
			last = p.Check(ctx, t.Entries)
			if last.Multihashes > 0 && last.OK() {
				return last, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("waiting for complete answers: %w (last check: %v; truth: %v)", context.Cause(ctx), last, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
