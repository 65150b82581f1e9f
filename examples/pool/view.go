package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// view renders snapshots as plain lines: a block per refresh, and a line
// per handoff the first time it is seen.
type view struct {
	w    io.Writer
	seen map[string]bool // handoffs already reported, by publisher→to
}

func newView(w io.Writer) *view { return &view{w: w, seen: map[string]bool{}} }

// short abbreviates a peer ID or CID for the view: its last 8 characters.
func short(s string) string {
	if len(s) <= 10 {
		return s
	}
	return "…" + s[len(s)-8:]
}

// count shows a store's multihash count as the page does: "about" when
// it is the store's estimate rather than an exact count.
func count(n uint64, exact bool) string {
	if exact {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("about %d", n)
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.0fKiB", float64(n)/(1<<10))
	}
}

// handoffs writes a line for each handoff not reported before.
func (v *view) handoffs(s *localpool.Snapshot) {
	for _, h := range s.Handoffs {
		key := h.Publisher + "→" + h.To + fmt.Sprint(h.Done)
		if v.seen[key] {
			continue
		}
		v.seen[key] = true
		switch {
		case h.Done:
			fmt.Fprintf(v.w, "HANDOFF done: publisher %s from %s (frozen) to %s, which resumes after its last ad\n", short(h.Publisher), h.From, h.To)
		case h.To != "":
			fmt.Fprintf(v.w, "HANDOFF in progress: publisher %s from %s to %s\n", short(h.Publisher), h.From, h.To)
		default:
			fmt.Fprintf(v.w, "HANDOFF waiting: publisher %s from %s (%s)\n", short(h.Publisher), h.From, h.Waiting)
		}
	}
}

// render writes the state of the pool at s.Time.
func (v *view) render(s *localpool.Snapshot, elapsed string) {
	v.handoffs(s)
	fmt.Fprintf(v.w, "── %s ── assigner %s\n", elapsed, upDown(s.AssignerUp))
	fmt.Fprintf(v.w, "  %-10s %-7s %-8s %13s %18s  %s\n", "INDEXER", "STATE", "ID", "MULTIHASHES", "DISK (of budget)", "PUBLISHERS")
	for _, ix := range s.Indexers {
		state := "active"
		switch {
		case !ix.Up:
			state = "down"
		case ix.Frozen:
			state = "FROZEN"
		}
		var pubs []string
		for _, h := range ix.Publishers {
			p := short(h.Publisher)
			if h.Continued != "" {
				p += "(from " + h.Continued + ")"
			}
			pubs = append(pubs, p)
		}
		usage := "?"
		if ix.Usage >= 0 {
			usage = fmt.Sprintf("%.0f%%", ix.Usage)
		}
		disk := fmt.Sprintf("%s (%s)", bytesString(ix.DiskBytes), usage)
		mhs := "-"
		if ix.Up {
			mhs = count(ix.Multihashes, ix.MultihashesExact)
		}
		fmt.Fprintf(v.w, "  %-10s %-7s %-8s %13s %18s  %s\n", ix.Name, state, short(ix.ID), mhs, disk, strings.Join(pubs, " "))
	}
	fmt.Fprintf(v.w, "  %-22s %-9s %5s %-10s %4s  %s\n", "PUBLISHER", "ID", "ADS", "HEAD", "LAG", "OWNER")
	for _, p := range s.Publishers {
		lag := "-"
		switch {
		case p.Lag >= 0:
			lag = fmt.Sprint(p.Lag)
		case len(p.Owners) > 0:
			lag = "≥1" // behind a head the pool did not see served
		}
		owner := strings.Join(p.Owners, ",")
		if owner == "" {
			owner = "-"
		}
		if len(p.Frozen) > 0 {
			owner += " (frozen: " + strings.Join(p.Frozen, ",") + ")"
		}
		name := p.Name
		if p.Fault != "" {
			name += " [" + p.Fault + "]"
			lag = "-"
		}
		if p.Err != "" {
			fmt.Fprintf(v.w, "  %-22s down\n", name)
			continue
		}
		fmt.Fprintf(v.w, "  %-22s %-9s %5d %-10s %4s  %s\n", name, short(p.ID), p.Ads, short(p.Head), lag, owner)
	}
}

// probes writes the result of query probes through the front end.
func (v *view) probes(ps []localpool.Probe) {
	for _, p := range ps {
		verdict := "COMPLETE"
		switch {
		case p.Err != "":
			verdict = "FAILED: " + p.Err
		case !p.Complete:
			verdict = "INCOMPLETE"
		}
		held := slices.Clone(p.HeldBy)
		if len(held) == 0 {
			held = []string{"none"}
		}
		fmt.Fprintf(v.w, "  probe %s (publisher %s): %d/%d providers via the front end, held by %s: %s\n",
			short(p.Multihash), short(p.Publisher), p.Got, p.Want, strings.Join(held, ","), verdict)
	}
}

// piece writes the result of a piece sample through the piece sampler.
func (v *view) piece(s localpool.PieceSample) {
	verdict := "VERIFIED"
	if !s.OK() {
		verdict = "not yet"
		if s.Code == "" && s.Err != "" {
			verdict = "FAILED"
		}
	}
	fmt.Fprintf(v.w, "  piece sample %s of %s (seed %q): %v: %s\n", short(s.Piece), short(s.Provider), s.Seed, s, verdict)
}

func upDown(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// shards writes the query layer: the layout's epoch and phase, and each
// query node with its share of the keyspace, its state and its keys.
func (v *view) shards(s *localpool.ShardState) {
	l := s.Layout
	change := ""
	if l.Phase != keyspace.PhaseStable {
		change = fmt.Sprintf(" (ring %v → %v)", l.Current, l.Next)
	}
	fmt.Fprintf(v.w, "  query layer: epoch %d, %s%s, R=%d\n", l.Epoch, l.Phase, change, l.Replication)
	fmt.Fprintf(v.w, "  %-10s %-12s %6s %6s %13s  %s\n", "QUERY", "STATE", "SHARE", "NEXT", "MULTIHASHES", "TASK")
	for _, q := range s.Query {
		state := "ready"
		switch {
		case !q.Up:
			state = "down"
		case !q.Ready:
			state = "catching up"
		}
		next := "-"
		if l.Phase != keyspace.PhaseStable {
			next = fmt.Sprintf("%.0f%%", 100*q.NextShare)
		}
		task := ""
		if t := q.Copy; t != nil && t.Epoch == l.Epoch {
			task = fmt.Sprintf("copy %d keys", t.Keys)
			if t.Done {
				task += " (done)"
			}
		}
		if t := q.Drop; t != nil && t.Epoch == l.Epoch {
			task = fmt.Sprintf("dropped %d keys", t.Keys)
		}
		mhs := "-"
		if q.Up {
			mhs = count(uint64(max(q.Multihashes, 0)), q.MultihashesExact)
		}
		fmt.Fprintf(v.w, "  %-10s %-12s %5.0f%% %6s %13s  %s\n", q.Name, state, 100*q.Share, next, mhs, task)
	}
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(s.Ingest)) {
		st := s.Ingest[name]
		pending := 0
		for _, o := range st.Owners {
			pending += o.Pending
		}
		lines = append(lines, fmt.Sprintf("%s epoch %d, %d batches in its outboxes", name, st.Epoch, pending))
	}
	if len(lines) > 0 {
		fmt.Fprintf(v.w, "  ingest: %s\n", strings.Join(lines, "; "))
	}
}
