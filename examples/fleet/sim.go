package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/lease"
)

// simFlags are the defaults of `fleet sim`.
func simFlags() fleetFlags {
	t := defaultTuning()
	t.TTL, t.Window, t.Liveness, t.Heartbeat, t.Scan = 4*time.Second, time.Second, 2*time.Second, 500*time.Millisecond, 100*time.Millisecond
	t.MaxBids = 2
	return fleetFlags{storeFlags: storeFlags{Store: storeRedis}, EtcdMembers: 1, Prefix: "fleet-sim:", Nodes: 4, Repos: 500, MinSize: 2 << 10, MaxSize: 256 << 10,
		Seed: 1, Duration: 5 * time.Minute, Oversize: 1, Steady: 10 * time.Second, Rehydration: "both",
		Autoscale: "off", AutoscaleStart: 2, ScaleGap: 2 * time.Second, SaturationRounds: 20, IdleAfter: 5 * time.Second, ScaleCooldown: 2 * time.Second,
		tuning: t}
}

// runSim is `fleet sim`: N nodes claim M repos of varied sizes; once
// every repo is ready it kills the node holding the most with SIGKILL,
// waits for full coverage again, and reports.
func runSim(ctx context.Context, args []string, stderr io.Writer) error {
	ff := simFlags()
	if err := ff.parse("sim", args, stderr); err != nil {
		return err
	}
	out := os.Stdout
	if ff.Autoscale != "off" {
		return runAutoscaleSim(ctx, ff, out)
	}
	ctx, cancel := context.WithTimeout(ctx, ff.Duration)
	defer cancel()
	f, err := startFleet(ctx, ff, out)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(out, "%d nodes started; ttl %v, window %v, max-bids %s, scan %v, index concurrency %d\n",
		ff.Nodes, ff.TTL, ff.Window, maxBidsText(ff.MaxBids), ff.Scan, ff.IndexConcurrency)

	t0 := time.Now()
	if err := f.putCatalog(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "catalog of %d rows put in %v\n", len(f.repos)+ff.Oversize, time.Since(t0).Round(time.Millisecond))
	rows, err := f.waitCoverage(ctx, t0, nil)
	if err != nil {
		return err
	}
	initial := time.Since(t0)
	fmt.Fprintf(out, "full coverage: %d/%d repos ready after %v\n", len(rows), len(rows), initial.Round(10*time.Millisecond))
	if ff.Oversize > 0 {
		// Every node reports the rows too large for it once its scan has
		// seen them, which it has by now; wait a few scans to be sure.
		var by map[string]int
		var need map[string]int64
		var asked int
		for range 50 {
			if by, need, asked = f.starved(ctx); len(by) >= ff.Oversize {
				break
			}
			time.Sleep(ff.Scan)
		}
		ids := make([]string, 0, len(by))
		for id := range by {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		fmt.Fprintf(out, "starved (too large for the budget of %s, never bid on): %d rows\n", mib(f.budget), len(ids))
		for _, id := range ids {
			fmt.Fprintf(out, "  %s needs %s; reported by %d/%d nodes\n", id, mib(need[id]), by[id], asked)
		}
	}

	if ff.Steady > 0 {
		ops, err := f.steadyLoad(ctx, ff.Steady)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "steady state: the %s server handled %.0f requests/s over %v, %.0f per node\n",
			ff.Store, ops, ff.Steady, ops/float64(ff.Nodes))
	}

	// Kill the node that holds the most; with -rehydration both, once with
	// loading off and, after a fresh node takes the victim's place, once
	// more with it on.
	var kills []killPhase
	switch ff.Rehydration {
	case "both":
		k, err := f.killAndRecover(ctx, rows, "snapshots not loaded", syscall.SIGKILL)
		if err != nil {
			return err
		}
		kills = append(kills, k)
		if err := f.replace(ctx, k.Victim); err != nil {
			return err
		}
		if err := f.setRehydrate(ctx, true); err != nil {
			return err
		}
		if rows, err = f.rows(ctx); err != nil {
			return err
		}
		k, err = f.killAndRecover(ctx, rows, "snapshots loaded", syscall.SIGKILL)
		if err != nil {
			return err
		}
		kills = append(kills, k)
	default:
		label := map[string]string{"on": "snapshots loaded", "off": "no snapshots"}[ff.Rehydration]
		k, err := f.killAndRecover(ctx, rows, label, syscall.SIGKILL)
		if err != nil {
			return err
		}
		kills = append(kills, k)
	}
	if ff.Rehydration != "off" {
		// Last, a drain: SIGTERM to the node that holds the most, whose
		// indexes its successors fetch from it (fleetnode, handoff.go); with as many
		// survivors as the kills had.
		if err := f.replace(ctx, kills[len(kills)-1].Victim); err != nil {
			return err
		}
		if err := f.setRehydrate(ctx, true); err != nil {
			return err
		}
		if rows, err = f.rows(ctx); err != nil {
			return err
		}
		k, err := f.killAndRecover(ctx, rows, "indexes handed off", syscall.SIGTERM)
		if err != nil {
			return err
		}
		kills = append(kills, k)
	}

	all := make([]string, len(rows))
	for i, r := range rows {
		all[i] = r.ID
	}
	rep := f.report(t0, initial, all, kills)
	fmt.Fprint(out, "\n"+rep)

	if err := f.stopNodes(); err != nil {
		return err
	}
	rows, err = f.rows(ctx)
	if err != nil {
		return err
	}
	idle := 0
	for _, r := range rows {
		if r.Owner == "" && r.State == lease.Idle {
			idle++
		}
	}
	fmt.Fprintf(out, "after SIGTERM of the survivors: %d/%d rows idle\n", idle, len(rows))
	return nil
}

func maxBidsText(n int) string {
	if n == 0 {
		return "dynamic (live nodes)"
	}
	return fmt.Sprint(n)
}

// waitCoverage polls the catalog every 100ms until every row is ready at
// a live node, printing progress every 5s.
func (f *fleet) waitCoverage(ctx context.Context, since time.Time, dead map[string]bool) ([]lease.Row, error) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		all, err := f.rows(ctx)
		if err != nil {
			return nil, err
		}
		rows := slices.DeleteFunc(all, func(r lease.Row) bool { return !f.fits(r) })
		ready, warming, unassigned := coverage(rows, dead)
		if ready == len(rows) {
			return rows, nil
		}
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			fmt.Fprintf(f.out, "  t=%5.1fs ready %d, warming %d, unassigned %d\n", time.Since(since).Seconds(), ready, warming, unassigned)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("coverage not reached (%d/%d ready): %w", ready, len(rows), ctx.Err())
		case <-t.C:
		}
	}
}

// killPhase is one SIGKILL (or SIGTERM) of the sim and the recovery
// after it.
type killPhase struct {
	Label    string // how the survivors rebuild: "snapshots loaded", …
	Signal   syscall.Signal
	Victim   string
	At       time.Time
	After    time.Duration // until full coverage again
	Lost     []string      // the items the victim held
	Readable int           // repos with a ready copy on a live node right after the kill
}

// killAndRecover sends sig (SIGKILL, or SIGTERM for a drain) to the live
// node that holds the most of rows and waits until every row is ready
// again at a live node (and, after a SIGTERM, until the node exited).
func (f *fleet) killAndRecover(ctx context.Context, rows []lease.Row, label string, sig syscall.Signal) (killPhase, error) {
	f.mu.Lock()
	var live []*child
	for _, c := range f.nodes {
		if !c.Exited() {
			live = append(live, c)
		}
	}
	f.mu.Unlock()
	held := map[string][]string{}
	for _, r := range rows {
		held[r.Owner] = append(held[r.Owner], r.ID)
	}
	victim := live[0]
	for _, c := range live {
		if len(held[c.Name]) > len(held[victim.Name]) {
			victim = c
		}
	}
	k := killPhase{Label: label, Signal: sig, Victim: victim.Name, Lost: held[victim.Name]}
	// With replicas, the repos that keep a ready copy on a live node.
	owners := make(map[string]string, len(rows))
	for _, r := range rows {
		owners[r.ID] = r.Owner
	}
	for _, r := range f.repos {
		for slot := range f.flags.Replicas {
			if o := owners[lease.ReplicaID(r.ID, slot)]; o != "" && o != victim.Name {
				k.Readable++
				break
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // let trailing events of the phase before arrive
	k.At = time.Now()
	_ = victim.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		<-victim.done
	}
	fmt.Fprintf(f.out, "%s %s (pid %d), which held %d repos; the survivors rebuild with %s\n", signalName(sig), victim.Name, victim.cmd.Process.Pid, len(k.Lost), label)
	if _, err := f.waitCoverage(ctx, k.At, map[string]bool{victim.Name: true}); err != nil {
		return k, err
	}
	k.After = time.Since(k.At)
	fmt.Fprintf(f.out, "full coverage again after %v\n", k.After.Round(10*time.Millisecond))
	select {
	case <-victim.done:
	case <-ctx.Done():
		return k, ctx.Err()
	}
	time.Sleep(500 * time.Millisecond)
	return k, nil
}

// replace starts a fresh node (empty memory) under the name of a killed
// one, so that the next kill has as many survivors as the last.
func (f *fleet) replace(ctx context.Context, name string) error {
	c, err := f.startNode(ctx, name)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.nodes = append(f.nodes, c)
	f.mu.Unlock()
	fmt.Fprintf(f.out, "started a fresh %s (pid %d)\n", name, c.cmd.Process.Pid)
	return nil
}

// setRehydrate writes the fleet's rehydrate setting and waits until every
// live node reports it in GET /status.
func (f *fleet) setRehydrate(ctx context.Context, on bool) error {
	v := map[bool]string{true: "on", false: "off"}[on]
	if err := f.tab.Settings.Set(ctx, map[string]string{fleetnode.SettingRehydrate: v}); err != nil {
		return fmt.Errorf("set rehydrate: %w", err)
	}
	deadline := time.Now().Add(10*f.flags.Heartbeat + 5*time.Second)
	for {
		f.mu.Lock()
		nodes := append([]*child(nil), f.nodes...)
		f.mu.Unlock()
		pending := 0
		for _, c := range nodes {
			if c.Exited() {
				continue
			}
			if st, err := c.status(ctx, f.hc); err != nil || st.Rehydrate != on {
				pending++
			}
		}
		if pending == 0 {
			fmt.Fprintf(f.out, "rehydrate %s at every node\n", v)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rehydrate %s: %d nodes did not apply it by %v", v, pending, deadline.Format(time.TimeOnly))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.flags.Heartbeat / 2):
		}
	}
}

// report computes the figures of a sim run from the nodes' events: the
// initial coverage from t0, and each kill's recovery.
func (f *fleet) report(t0 time.Time, initial time.Duration, all []string, kills []killPhase) string {
	evs := f.eventsSince(t0)
	type phase struct {
		firstBid, ready map[string]time.Time
		calls, failed   int
		fromSnapshot    int
		fromHandoff     int
	}
	phases := make([]phase, 1+len(kills))
	for i := range phases {
		phases[i] = phase{firstBid: map[string]time.Time{}, ready: map[string]time.Time{}}
	}
	indexes := map[string]int{} // successful Index calls per item
	var calls, failed, evicted, lostLeases, won, reused int
	for _, e := range evs {
		item := e.Fields["item"]
		pi := 0
		for i, k := range kills {
			if !e.At.Before(k.At) {
				pi = i + 1
			}
		}
		p := &phases[pi]
		switch e.Fields["msg"] {
		case "bid":
			if _, ok := p.firstBid[item]; !ok {
				p.firstBid[item] = e.At
			}
		case "won":
			won++
		case "reused":
			reused++ // no Index call: a kept index served again
			if _, ok := p.ready[item]; !ok {
				p.ready[item] = e.At
			}
		case "indexed":
			calls++
			p.calls++
			if e.Fields["err"] != "" {
				failed++
				p.failed++
				continue
			}
			switch e.Fields["from"] {
			case "snapshot":
				p.fromSnapshot++
			case "handoff":
				p.fromHandoff++
			}
			indexes[item]++
			if _, ok := p.ready[item]; !ok {
				p.ready[item] = e.At
			}
		case "evicted":
			evicted++
		case "lost":
			lostLeases++
		}
	}
	lat := func(items []string, from func(string) (time.Time, bool), ready map[string]time.Time) string {
		var ds []time.Duration
		for _, it := range items {
			s, ok := from(it)
			r, rok := ready[it]
			if ok && rok && !r.Before(s) {
				ds = append(ds, r.Sub(s))
			}
		}
		return percentiles(ds)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "== fleet sim: %d repos × %d copies, %d nodes, budget %s each, rehydration %s ==\n",
		len(f.repos), f.flags.Replicas, f.flags.Nodes, mib(f.budget), f.flags.Rehydration)
	fmt.Fprintf(&b, "time to full coverage: initial %v\n", initial.Round(10*time.Millisecond))
	fmt.Fprintln(&b, "claim latency (to the owner's indexed event; n, p50, p95, max):")
	p1 := phases[0]
	fmt.Fprintf(&b, "  initial, from catalog put:        %s\n", lat(all, func(string) (time.Time, bool) { return t0, true }, p1.ready))
	fmt.Fprintf(&b, "  initial, from the first bid:      %s\n", lat(all, func(it string) (time.Time, bool) { t, ok := p1.firstBid[it]; return t, ok }, p1.ready))
	for i, k := range kills {
		p := phases[i+1]
		if k.Signal == syscall.SIGTERM {
			fmt.Fprintf(&b, "drain, %s: SIGTERM of %s (%d repos); full coverage again after %v (auctions + fetches)\n",
				k.Label, k.Victim, len(k.Lost), k.After.Round(10*time.Millisecond))
		} else {
			fmt.Fprintf(&b, "kill %d, %s: SIGKILL of %s (%d repos); full coverage again after %v (TTL %v + auctions + rebuilds)\n",
				i+1, k.Label, k.Victim, len(k.Lost), k.After.Round(10*time.Millisecond), f.flags.TTL)
			fmt.Fprintf(&b, "  readable right after the kill (a ready copy on a live node): %d/%d repos\n", k.Readable, len(f.repos))
		}
		fmt.Fprintf(&b, "  from %s:     %s\n", signalName(k.Signal), lat(k.Lost, func(string) (time.Time, bool) { return k.At, true }, p.ready))
		fmt.Fprintf(&b, "  from the 1st bid: %s\n", lat(k.Lost, func(it string) (time.Time, bool) { t, ok := p.firstBid[it]; return t, ok }, p.ready))
		fmt.Fprintf(&b, "  rebuilds: %d Index calls (%d failed), %d loaded from a snapshot, %d handed off, %d cloned and indexed\n",
			p.calls, p.failed, p.fromSnapshot, p.fromHandoff, p.calls-p.failed-p.fromSnapshot-p.fromHandoff)
	}
	if len(kills) >= 2 && kills[0].After > 0 && kills[1].Signal == syscall.SIGKILL {
		fmt.Fprintf(&b, "recovery with snapshots loaded / without: %.2f\n", kills[1].After.Seconds()/kills[0].After.Seconds())
	}
	multi, maxN := 0, 0
	for _, n := range indexes {
		if n > 1 {
			multi++
		}
		maxN = max(maxN, n)
	}
	lost := 0
	for _, k := range kills {
		lost += len(k.Lost)
	}
	fmt.Fprintf(&b, "reindexing: %d Index calls (%d failed) for %d catalog items; %d items indexed more than once (at most %d times); %d items re-homed after the kills\n",
		calls, failed, len(all), multi, maxN, lost)
	fmt.Fprintf(&b, "leases: %d won, %d lost by survivors, %d evictions; %d wins served from a kept index\n", won, lostLeases, evicted, reused)
	return b.String()
}

func signalName(sig syscall.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGKILL"
}

// percentiles formats n, p50, p95 and max of ds.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n=0"
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("n=%d p50 %v, p95 %v, max %v", len(ds), r(q(0.50)), r(q(0.95)), r(ds[len(ds)-1]))
}
