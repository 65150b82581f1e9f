package localpool

// Truth, Check, Probe, WaitComplete: the pool's answers compared with its publishers' ground truth.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Truth is the ground truth of the pool's honest publishers at the
// moment each was asked: what the front end must answer, and nothing
// else. The faulty publishers' truth is empty by definition (nothing
// they publish may be indexed), so it is not listed.
type Truth struct {
	// Publishers are each honest publisher's truth with its entries.
	Publishers []publishernode.Truth
	// Entries is the union of their entries, sorted by multihash.
	Entries []publishernode.Entry
	// Removed is the union of their removed multihashes (base58btc,
	// publishernode.Truth.Removed: advertised, every context removed; at
	// most publishernode.MaxRemoved per publisher), without those another
	// publisher still holds (they are in Entries), sorted by multihash.
	// The front end must answer none of them.
	Removed []string
}

// Queries returns what a check of the whole truth asks: Entries, then one
// Entry with no values for each Removed multihash, which must be
// answered with nothing (see [Pool.Check]).
func (t Truth) Queries() []publishernode.Entry {
	q := slices.Clip(t.Entries)
	for _, mh := range t.Removed {
		q = append(q, publishernode.Entry{Multihash: mh})
	}
	return q
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
	removed := map[string]string{} // base58 -> bytes
	for _, pt := range t.Publishers {
		for _, mh := range pt.Removed {
			if _, live := byMH[mh]; !live {
				b, _ := multihash.FromB58String(mh)
				removed[mh] = string(b)
			}
		}
	}
	for mh := range removed {
		t.Removed = append(t.Removed, mh)
	}
	slices.SortFunc(t.Removed, func(a, b string) int { return strings.Compare(removed[a], removed[b]) })
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
	// answered with exactly their true values (each once), or with none
	// for a removed one.
	Multihashes, Complete int
	// Removed is how many of the Multihashes were removed ones (asked
	// with no true value, [Truth.Queries]): any value answered for them
	// is stale, counted in Extra.
	Removed int
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
	// TimedOut counts queries that got no answer in time: each try
	// passed Config.LookupTimeout and was retried until the check's
	// context ended, or that context ended first. They are not wrong
	// answers: the front end was slow (a loaded machine, most often).
	TimedOut int
	// Examples describe up to five incomplete answers.
	Examples []string
}

// OK reports whether every multihash was answered in full, with nothing
// extra or duplicated.
func (c Check) OK() bool {
	return c.Complete == c.Multihashes && c.Extra == 0 && c.Duplicates == 0 && c.Failed == 0 && c.TimedOut == 0
}

// Wrong reports whether some answer differed from the truth (values
// missing, extra or duplicated) or was unusable: what a timeout is not.
func (c Check) Wrong() bool {
	return c.Missing+c.Extra+c.Duplicates+c.Failed > 0
}

func (c Check) String() string {
	return fmt.Sprintf("%d/%d complete (%d removed, asked to be gone), %d values missing, %d extra, %d duplicated, %d partial, %d failed, %d timed out",
		c.Complete, c.Multihashes, c.Removed, c.Missing, c.Extra, c.Duplicates, c.Partial, c.Failed, c.TimedOut)
}

// checkConcurrency bounds the queries of a Check in flight.
const checkConcurrency = 8

// Check asks the front end (GET /multihash/{mh}) for every entry and
// compares each answer with the entry's values: provider, context ID and
// metadata. An entry with no values is a removed multihash
// ([Truth.Queries]): it is complete when answered with nothing (404), and
// every value answered for it is Extra (stale). Pass [Truth.Queries] to
// check the whole truth, removals included.
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
	return Check{Multihashes: len(entries), Removed: removedIn(entries), Failed: len(entries), Examples: []string{"no indexer " + name}}
}

// removedIn counts the entries with no values: removed multihashes.
func removedIn(entries []publishernode.Entry) int {
	n := 0
	for _, e := range entries {
		if len(e.Values) == 0 {
			n++
		}
	}
	return n
}

func (p *Pool) checkAt(ctx context.Context, base string, entries []publishernode.Entry) Check {
	var mu sync.Mutex
	c := Check{Multihashes: len(entries), Removed: removedIn(entries)}
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	for _, e := range entries {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			got, partial, err := p.findRetry(ctx, base, e.Multihash)
			missing, extra, dup := compare(e.Values, got)
			mu.Lock()
			defer mu.Unlock()
			if partial {
				c.Partial++
			}
			var problem string
			switch {
			case errors.Is(err, errTimedOut):
				c.TimedOut++
				problem = err.Error()
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
				if len(e.Values) == 0 {
					problem = fmt.Sprintf("removed, yet %d values answered (stale)", len(got))
				}
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

// errTimedOut marks a lookup of a check that got no answer in time.
var errTimedOut = errors.New("no answer in time")

// lookupRetry is the pause before a timed-out lookup is asked again.
const lookupRetry = 100 * time.Millisecond

// findRetry is find with Config.LookupTimeout on each try, asking again
// after a try that timed out, while ctx lasts. A lookup that never got an
// answer returns an error wrapping errTimedOut, saying how many tries.
func (p *Pool) findRetry(ctx context.Context, base, mh string) ([]value, bool, error) {
	for try := 1; ; try++ {
		lctx, cancel := context.WithTimeout(ctx, p.cfg.LookupTimeout)
		vals, partial, err := p.find(lctx, base, mh)
		cancel()
		if err == nil || !isTimeout(err) {
			return vals, partial, err
		}
		select {
		case <-ctx.Done():
			tries := "1 try"
			if try > 1 {
				tries = fmt.Sprintf("%d tries", try)
			}
			return nil, false, fmt.Errorf("GET %s/multihash/%s: %w after %s of %v (the check's bound ended): %w",
				base, mh, errTimedOut, tries, p.cfg.LookupTimeout, err)
		case <-time.After(lookupRetry):
		}
	}
}

// isTimeout reports whether err is a lookup that ran out of time (its
// deadline, the client's timeout, or its context ended).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		(errors.As(err, &ne) && ne.Timeout())
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

// Probe is one multihash asked of the front end and of the nodes that
// hold the index: every indexer, or, in a sharded pool, the query nodes
// that own its key.
type Probe struct {
	Multihash string
	Publisher string // the provider of its first true value
	// Want is the number of true values; Got how many of them the front
	// end answered; Complete: all of them and nothing else.
	Want, Got int
	Complete  bool
	Partial   bool
	// HeldBy are the nodes whose own find API answered it: indexers, or
	// in a sharded pool query nodes (the ingest nodes hold no index).
	HeldBy []string
	Err    string `json:",omitempty"`
}

// probeTarget is a node a probe asks, by its role name and find URL.
type probeTarget struct{ name, find string }

// probeTargets are the nodes that hold the index for mh (base58): every
// indexer, or in a sharded pool the read owners of its key on the layout
// in force (an ingest node answers no lookup: asking it is an error in
// its log).
func (p *Pool) probeTargets(mh string) ([]probeTarget, error) {
	if p.cfg.Sharded == nil {
		var out []probeTarget
		for _, ix := range p.URLs().Indexers {
			out = append(out, probeTarget{ix.Name, ix.Find})
		}
		return out, nil
	}
	l, err := p.Layout()
	if err != nil {
		return nil, err
	}
	pl, err := keyspace.NewPlacement(l)
	if err != nil {
		return nil, err
	}
	key, err := multihash.FromB58String(mh)
	if err != nil {
		return nil, fmt.Errorf("multihash %s: %w", mh, err)
	}
	nodes := pl.Nodes()
	var out []probeTarget
	for _, o := range pl.AppendReadOwners(nil, key) {
		out = append(out, probeTarget{nodes[o].Name, nodes[o].URL})
	}
	return out, nil
}

// Probe asks the front end and the nodes that hold the index for e's
// multihash: every running indexer, or in a sharded pool the query nodes
// that own its key.
func (p *Pool) Probe(ctx context.Context, e publishernode.Entry) Probe {
	pr := Probe{Multihash: e.Multihash, Want: len(e.Values)}
	if len(e.Values) > 0 {
		pr.Publisher = e.Values[0].ProviderID
	}
	targets, terr := p.probeTargets(e.Multihash)
	held := make([]bool, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Go(func() {
			got, _, err := p.find(ctx, tg.find, e.Multihash)
			held[i] = err == nil && len(got) > 0
		})
	}
	got, partial, err := p.find(ctx, p.URLs().Find, e.Multihash)
	wg.Wait()
	for i, h := range held {
		if h {
			pr.HeldBy = append(pr.HeldBy, targets[i].name)
		}
	}
	pr.Partial = partial
	if err = errors.Join(err, terr); err != nil {
		pr.Err = err.Error()
		return pr
	}
	missing, extra, dup := compare(e.Values, got)
	pr.Got = pr.Want - missing
	pr.Complete = missing+extra+dup == 0
	return pr
}

// WaitComplete waits until the front end answers every multihash of the
// honest publishers' truth in full and none of their removed multihashes
// ([Truth.Queries], [Check.OK]), asking again every 500 ms, and returns
// the last check. A truth with no live multihash does not count as
// complete. When ctx ends first, the error says why and gives the last
// check (a check that ctx cut short replaces the one before only if there
// was none, so its queries that the deadline failed are not counted as
// failed answers) and, if the truth could not be read at the last try,
// why.
func (p *Pool) WaitComplete(ctx context.Context) (Check, error) {
	var last Check
	checked := false
	for {
		t, terr := p.Truth(ctx)
		if terr == nil {
			c := p.Check(ctx, t.Queries())
			if c.Multihashes > c.Removed && c.OK() {
				return c, nil
			}
			if ctx.Err() == nil || !checked {
				last, checked = c, true
			}
		}
		select {
		case <-ctx.Done():
			what := "no check finished"
			if checked {
				what = fmt.Sprintf("last check: %v", last)
				if last.TimedOut > 0 && !last.Wrong() {
					what += fmt.Sprintf("; %d lookups got no answer in time and none was answered wrong: the front end answered slowly", last.TimedOut)
				}
			}
			if terr != nil {
				what += fmt.Sprintf("; the truth could not be read: %v", terr)
			}
			return last, fmt.Errorf("waiting for complete answers: %w (%s)", context.Cause(ctx), what)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
