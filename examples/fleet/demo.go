package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/lease"
)

// demoFlags are the defaults of `fleet demo`.
func demoFlags() fleetFlags {
	t := defaultTuning()
	t.TTL, t.Window, t.Liveness, t.Heartbeat, t.Scan = 5*time.Second, time.Second, 3*time.Second, 500*time.Millisecond, 100*time.Millisecond
	return fleetFlags{storeFlags: storeFlags{Store: storeRedis}, EtcdMembers: 1, Prefix: "fleet-demo:", Nodes: 3, Repos: 50, MinSize: 2 << 10, MaxSize: 64 << 10,
		Seed: 1, Duration: 2 * time.Minute, Rehydration: "on", tuning: t}
}

// runDemo is `fleet demo`: 3 nodes claim 50 generated repos; it prints
// ownership as it settles, routes a few queries through nodes that do not
// own the repo, and stops everything.
func runDemo(ctx context.Context, args []string, stderr io.Writer) error {
	ff := demoFlags()
	if err := ff.parse("demo", args, stderr); err != nil {
		return err
	}
	out := os.Stdout
	ctx, cancel := context.WithTimeout(ctx, ff.Duration)
	defer cancel()
	f, err := startFleet(ctx, ff, out)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, c := range f.nodes {
		fmt.Fprintf(out, "%s listening on %s (pid %d)\n", c.Name, c.Addr, c.cmd.Process.Pid)
	}
	start := time.Now()
	if err := f.putCatalog(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "catalog: %d rows put; the nodes bid for them\n\n", len(f.repos))

	// Ownership as it settles.
	rows, err := f.watch(ctx, start, nil, time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nall %d catalog rows (%d repos × %d copies) owned and ready after %v\n\n", len(rows), len(f.repos), ff.Replicas,
		time.Since(start).Round(10*time.Millisecond))
	fmt.Fprint(out, f.ownershipTable(ctx, rows))

	// Routed queries.
	fmt.Fprintln(out, "\nqueries sent to a node that does not own the repo:")
	rng := rand.New(rand.NewPCG(ff.Seed, 99))
	byID := make(map[string]lease.Row, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	for i := range 4 {
		r := f.repos[rng.IntN(len(f.repos))]
		q := "marker-" + strings.TrimPrefix(r.ID, "repo-")
		if i%2 == 1 {
			q = pickPhrase(rng, r.Files)
		}
		// A node that holds no copy of the repo, if there is one.
		holders := map[string]bool{}
		for slot := range ff.Replicas {
			holders[byID[lease.ReplicaID(r.ID, slot)].Owner] = true
		}
		via := f.nodes[0]
		for _, c := range f.nodes {
			if !holders[c.Name] {
				via = c
				break
			}
		}
		code, res, ref, err := fleetnode.Search(ctx, f.hc, via.Addr, r.ID, q, 3)
		switch {
		case err != nil:
			fmt.Fprintf(out, "  %s via %s: %v\n", r.ID, via.Name, err)
		case res == nil:
			fmt.Fprintf(out, "  %s via %s: %d %s owner=%s %s\n", r.ID, via.Name, code, ref.Status, ref.Owner, ref.Error)
		default:
			want := codeindex.Grep(indexFiles(r.Files), q)
			fmt.Fprintf(out, "  GET %s/search?repo=%s&q=%q → %d, served_by=%s routed_by=%s, %d match(es) shown%s; grep finds %d\n",
				via.Name, r.ID, q, code, res.ServedBy, res.RoutedBy, len(res.Matches), map[bool]string{true: " (truncated)"}[res.Truncated], len(want))
			for _, m := range res.Matches {
				fmt.Fprintf(out, "      %s:%d: %s\n", m.Path, m.Line, clip(m.Text, 70))
			}
		}
	}
	code, _, ref, err := fleetnode.Search(ctx, f.hc, f.nodes[0].Addr, "no-such-repo", "abc", 1)
	if err == nil {
		fmt.Fprintf(out, "  GET %s/search?repo=no-such-repo → %d %s\n", f.nodes[0].Name, code, ref.Status)
	}

	// Graceful shutdown: the nodes drain and release.
	fmt.Fprintln(out, "\nstopping the nodes with SIGTERM (they drain: mark draining, release)")
	if err := f.stopNodes(); err != nil {
		return err
	}
	rows, err = f.rows(ctx)
	if err != nil {
		return err
	}
	idle := 0
	for _, r := range rows {
		if r.State == lease.Idle && r.Owner == "" {
			idle++
		}
	}
	fmt.Fprintf(out, "after shutdown: %d/%d rows idle (released, not left to expire)\n", idle, len(rows))
	return nil
}

// watch prints a line of ownership every interval until every row is
// ready at a live node (nodes not in dead), and returns the rows.
func (f *fleet) watch(ctx context.Context, since time.Time, dead map[string]bool, interval time.Duration) ([]lease.Row, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rows, err := f.rows(ctx)
		if err != nil {
			return nil, err
		}
		ready, warming, unassigned := coverage(rows, dead)
		per := map[string][2]int{}
		for _, r := range rows {
			if r.Owner != "" && !dead[r.Owner] {
				p := per[r.Owner]
				p[0]++
				if r.Ready {
					p[1]++
				}
				per[r.Owner] = p
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "t=%5.1fs ", time.Since(since).Seconds())
		for _, c := range f.nodes {
			if dead[c.Name] {
				continue
			}
			p := per[c.Name]
			fmt.Fprintf(&b, " %s %2d owned %2d ready |", c.Name, p[0], p[1])
		}
		fmt.Fprintf(&b, " warming %d, unassigned %d", warming, unassigned)
		fmt.Fprintln(f.out, b.String())
		if ready == len(rows) {
			return rows, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("coverage not reached (%d/%d ready): %w", ready, len(rows), ctx.Err())
		case <-t.C:
		}
	}
}

// ownershipTable shows per node the items owned and ready and the memory
// used, from each node's GET /status.
func (f *fleet) ownershipTable(ctx context.Context, rows []lease.Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-8s %6s %6s %12s %12s %8s %8s\n", "node", "owned", "ready", "memory", "budget", "indexed", "evicted")
	for _, c := range f.nodes {
		if c.Exited() {
			continue
		}
		st, err := c.status(ctx, f.hc)
		if err != nil {
			fmt.Fprintf(&b, "  %-8s %v\n", c.Name, err)
			continue
		}
		ready := 0
		for _, it := range st.Items {
			if it.Ready {
				ready++
			}
		}
		fmt.Fprintf(&b, "  %-8s %6d %6d %12s %12s %8d %8d\n", c.Name, len(st.Items), ready, mib(st.Used), mib(st.Budget),
			st.Counters["indexed"], st.Counters["evicted"])
	}
	_, _, unassigned := coverage(rows, nil)
	fmt.Fprintf(&b, "  unassigned: %d\n", unassigned)
	return b.String()
}

// pickPhrase returns two consecutive words from a random line of a text
// file of files.
func pickPhrase(rng *rand.Rand, files []repogen.File) string {
	for range 20 {
		f := files[rng.IntN(len(files))]
		if codeindex.IsBinary(f.Data) || len(f.Data) == 0 {
			continue
		}
		lines := bytes.Split(bytes.TrimSpace(f.Data), []byte{'\n'})
		words := strings.Fields(string(lines[rng.IntN(len(lines))]))
		if len(words) >= 2 {
			i := rng.IntN(len(words) - 1)
			return words[i] + " " + words[i+1]
		}
	}
	return "ka"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
