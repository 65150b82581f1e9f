package main

// The end check: halt the publishers, wait for the pool to answer their
// truth in full up to a bound that scales with the work, and say why not.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
)

// How the end check's bound scales with the work when --check-timeout is
// not given: time for each multihash of the truth (the check asks the
// front end for every one, a few times over while it waits) and for each
// advertisement the indexers have still to walk, kept between
// --check-min and --check-max.
const (
	checkPerMultihash = time.Millisecond
	checkPerAd        = 100 * time.Millisecond
	defaultCheckMin   = 30 * time.Second
	defaultCheckMax   = 10 * time.Minute
)

// stepTimeout bounds each step of the summary around the wait: the final
// view, the piece sample, halting the publishers, sizing the work, and
// the snapshot that explains an incomplete check.
const stepTimeout = 30 * time.Second

// checkBound is the end check's bound for a truth of multihashes and ads
// still to walk, and how it was set, for the output.
func checkBound(o *options, multihashes, ads int) (time.Duration, string) {
	if o.checkTimeout > 0 {
		return o.checkTimeout, "--check-timeout"
	}
	d := time.Duration(multihashes)*checkPerMultihash + time.Duration(ads)*checkPerAd
	how := fmt.Sprintf("%v a multihash + %v an ad to walk", checkPerMultihash, checkPerAd)
	switch {
	case d < o.checkMin:
		d, how = o.checkMin, how+", raised to --check-min"
	case d > o.checkMax:
		d, how = o.checkMax, how+", cut to --check-max"
	}
	return d, how
}

// work is what the end check waits for: the multihashes of the halted
// publishers' truth and the advertisements their owners have not walked
// (a publisher whose lag is unknown counts with all its ads).
func work(ctx context.Context, p *localpool.Pool) (multihashes, ads int) {
	if t, err := p.Truth(ctx); err == nil {
		multihashes = len(t.Queries()) // the removed ones are asked too
	}
	if s, err := p.Snapshot(ctx); err == nil {
		for _, ps := range s.Publishers {
			switch {
			case ps.Fault != "" || ps.Err != "":
			case ps.Lag >= 0:
				ads += ps.Lag
			default:
				ads += ps.Ads
			}
		}
	}
	return multihashes, ads
}

// summary checks the demo's piece through the piece sampler, halts the
// publishers so that their truth holds still, and waits until the front
// end answers every multihash of that truth in full, up to the bound of
// checkBound or until abort is closed. It prints what it waited for, how
// long, and the result; when the pool is incomplete it prints why (the
// indexers and publishers behind, a few failing multihashes) and returns
// errIncomplete.
func summary(p *localpool.Pool, w io.Writer, o *options, abort <-chan struct{}, ran time.Duration, pc publishernode.Piece, havePiece bool) error {
	step := func() (context.Context, context.CancelFunc) { return abortable(stepTimeout, abort) }
	fmt.Fprintf(w, "── summary after %s ──\n", ran.Round(time.Second))
	ctx, cancel := step()
	if s, err := p.Snapshot(ctx); err == nil {
		newView(w).render(s, "final")
	}
	if havePiece {
		newView(w).piece(p.SamplePiece(ctx, pc, pieceSeed, pieceSamples))
	}
	cancel()
	// Stop production so that the truth holds still, then give the
	// indexers until the bound to catch up with the last ads.
	ctx, cancel = step()
	if err := p.HaltPublishers(ctx); err != nil {
		fmt.Fprintln(w, "  halting the publishers:", err)
	}
	mhs, ads := work(ctx, p)
	cancel()
	bound, how := checkBound(o, mhs, ads)
	fmt.Fprintf(w, "  publishers halted; waiting up to %v (%s) for the front end to answer every multihash of their truth in full: %d multihashes, %d ads still to walk\n",
		bound, how, mhs, ads)
	start := time.Now()
	ctx, cancel = abortable(bound, abort)
	c, err := p.WaitComplete(ctx)
	cancel()
	waited := time.Since(start).Round(time.Millisecond)
	if err == nil {
		fmt.Fprintf(w, "  every multihash of their truth through the front end: complete after %v: %v\n", waited, c)
		return nil
	}
	why := "the bound passed"
	select {
	case <-abort:
		why = "a second interrupt cut the wait short"
	default:
	}
	fmt.Fprintf(w, "  every multihash of their truth through the front end: INCOMPLETE after %v (%s): %v\n", waited, why, err)
	var reasons []string
	if c.TimedOut > 0 {
		reasons = append(reasons, timedOut(c))
	}
	if c.Multihashes == 0 || c.Wrong() || c.TimedOut == 0 {
		// Some answers were wrong (or none came): what keeps the pool
		// behind. Timeouts alone are the machine's slowness, not the
		// pool's state, and a frozen indexer is no reason for them.
		ctx, cancel = step()
		more := behind(ctx, p)
		cancel()
		switch {
		case len(more) > 0:
		case c.Multihashes == 0:
			more = []string{"no check of the answers finished within the bound"}
		case c.Wrong():
			more = []string{"no indexer reports a publisher behind, none is down and no handoff waits: the answers themselves differ from the truth"}
		}
		reasons = append(reasons, more...)
	}
	for _, r := range reasons {
		fmt.Fprintln(w, "  why:", r)
	}
	if len(c.Examples) > 0 {
		fmt.Fprintln(w, "  failing multihashes (a few):")
		for _, e := range c.Examples {
			fmt.Fprintln(w, "   ", e)
		}
	}
	if c.Multihashes == 0 {
		return fmt.Errorf("%w: waited %v (%s) and no check finished", errIncomplete, waited, why)
	}
	if c.TimedOut > 0 && !c.Wrong() {
		return fmt.Errorf("%w: waited %v (%s): %d lookups got no answer in time, none was answered wrong: %v", errIncomplete, waited, why, c.TimedOut, c)
	}
	return fmt.Errorf("%w: waited %v (%s): %v", errIncomplete, waited, why, c)
}

// timedOut says why lookups timed out: the front end answered slowly,
// and how many of the answers that came were right.
func timedOut(c localpool.Check) string {
	r := fmt.Sprintf("%d of %d lookups got no answer in time (each try retried until the bound): the front end answered slowly, most likely an overloaded machine (see the load; a longer --check-max gives it time)",
		c.TimedOut, c.Multihashes)
	switch {
	case c.Wrong():
	case c.Complete > 0:
		r += fmt.Sprintf("; the %d answers that came were all right", c.Complete)
	default:
		r += "; no answer came, and none was wrong"
	}
	return r
}

// behind returns, from a snapshot, what keeps the pool from answering in
// full: roles down, frozen indexers, publishers behind or held by no
// active indexer, and handoffs waiting.
func behind(ctx context.Context, p *localpool.Pool) []string {
	s, err := p.Snapshot(ctx)
	if err != nil {
		return []string{"no snapshot of the pool: " + err.Error()}
	}
	var out []string
	if !s.AssignerUp {
		out = append(out, "the assigner's state API does not answer")
	}
	for _, ix := range s.Indexers {
		switch {
		case !ix.Up:
			why := "down"
			if ix.Err != "" {
				why += ": " + ix.Err
			}
			out = append(out, fmt.Sprintf("%s is %s", ix.Name, why))
		case ix.Frozen:
			out = append(out, fmt.Sprintf("%s is frozen (%.0f%% of its disk budget)", ix.Name, ix.Usage))
		}
	}
	for _, ps := range s.Publishers {
		if ps.Fault != "" {
			continue
		}
		name := fmt.Sprintf("%s (%s)", ps.Name, short(ps.ID))
		switch {
		case ps.Err != "":
			out = append(out, fmt.Sprintf("%s does not answer: %s", ps.Name, ps.Err))
		case len(ps.Owners) == 0 && len(ps.Frozen) > 0:
			out = append(out, fmt.Sprintf("%s is held by no active indexer, only by frozen %v", name, ps.Frozen))
		case len(ps.Owners) == 0:
			out = append(out, fmt.Sprintf("%s is held by no indexer", name))
		case ps.Lag > 0:
			out = append(out, fmt.Sprintf("%s: %d of its %d ads not walked yet by %v", name, ps.Lag, ps.Ads, ps.Owners))
		case ps.Lag < 0:
			out = append(out, fmt.Sprintf("%s: %v have not reached its head (%s) and the pool cannot tell how far behind", name, ps.Owners, short(ps.Head)))
		}
	}
	for _, h := range s.Pending() {
		to := h.To
		if to == "" {
			to = "no receiver yet"
		}
		r := fmt.Sprintf("handoff of %s from %s to %s not done", short(h.Publisher), h.From, to)
		if h.Waiting != "" {
			r += " (" + h.Waiting + ")"
		}
		out = append(out, r)
	}
	return out
}

// abortable is a context that ends after d or when abort is closed.
func abortable(d time.Duration, abort <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	if abort != nil {
		go func() {
			select {
			case <-abort:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}
