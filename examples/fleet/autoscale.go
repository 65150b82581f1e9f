package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// simScaler acts on the nodes' autoscaler decisions (msg=scale lines) as
// whatever runs a fleet would: a grow starts a node, at most one per gap
// and up to max; a shrink stops the node that asked, with SIGTERM (it
// drains), while more than min run. A grow starts as many nodes as the
// asking node's signals want (Signals.NodesWanted), up to max. Until acting is set it only counts.
type simScaler struct {
	f        *fleet
	ctx      context.Context
	max, min int
	gap      time.Duration
	acting   atomic.Bool

	mu        sync.Mutex
	next      int // index of the next node name
	lastStart time.Time
	starting  int            // starts under way
	asked     map[string]int // decisions seen, by kind
	started   []string
	stopped   []string
	errs      []error
}

// nodeName is the name of the i-th node: node-a, …, node-z, node-a1, ….
func nodeName(i int) string {
	name := "node-" + string(rune('a'+i%26))
	if i >= 26 {
		name += strconv.Itoa(i / 26)
	}
	return name
}

// decide handles one msg=scale line of node e.Node. It runs on the node's
// log reader, so a start goes on in a goroutine.
func (s *simScaler) decide(e event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := e.Fields["decision"]
	if s.asked == nil {
		s.asked = map[string]int{}
	}
	s.asked[d]++
	if !s.acting.Load() {
		return
	}
	switch d {
	case "grow":
		if s.starting > 0 || time.Since(s.lastStart) < s.gap {
			return
		}
		want, _ := strconv.Atoi(e.Fields["nodes_wanted"])
		n := min(max(want, 1), s.max-s.live())
		if n <= 0 {
			return
		}
		s.starting, s.lastStart = n, time.Now()
		for range n {
			name := nodeName(s.next)
			s.next++
			go func() {
				c, err := s.f.startNode(s.ctx, name)
				s.mu.Lock()
				defer s.mu.Unlock()
				s.starting--
				s.lastStart = time.Now()
				if err != nil {
					s.errs = append(s.errs, err)
					return
				}
				s.f.mu.Lock()
				s.f.nodes = append(s.f.nodes, c)
				s.f.mu.Unlock()
				s.started = append(s.started, name)
				fmt.Fprintf(s.f.out, "  autoscaler: %s asked to grow by %d; started %s (pid %d), %d live\n", e.Node, want, name, c.cmd.Process.Pid, s.live())
			}()
		}
	case "shrink":
		if s.live() <= s.min {
			return
		}
		c := s.f.child(e.Node)
		if c == nil || c.Exited() || slices.Contains(s.stopped, e.Node) {
			return
		}
		s.stopped = append(s.stopped, e.Node)
		fmt.Fprintf(s.f.out, "  autoscaler: %s idle for %s, asked to shrink; SIGTERM\n", e.Node, e.Fields["idle"])
		go func() { _ = c.Stop(s.f.flags.TTL + 30*time.Second) }()
	}
}

// live counts the nodes running and not being stopped; the caller holds
// s.mu.
func (s *simScaler) live() int {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	n := 0
	for _, c := range s.f.nodes {
		if !c.Exited() && !slices.Contains(s.stopped, c.Name) {
			n++
		}
	}
	return n
}

// child returns the node named name, nil if none.
func (f *fleet) child(name string) *child {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.nodes) - 1; i >= 0; i-- {
		if f.nodes[i].Name == name {
			return f.nodes[i]
		}
	}
	return nil
}

// runAutoscaleSim is `fleet sim -autoscale on|both`: it starts
// -autoscale-start nodes with the agent's autoscaler for a catalog sized
// for -nodes, and reports coverage. With both, the sim first ignores the
// decisions until coverage stalls (what the fleet reaches without an
// autoscaler), then acts on them; with on, it acts from the start. After
// full coverage it starts one spare node, which finds nothing to claim,
// and waits for its shrink decision.
func runAutoscaleSim(ctx context.Context, ff fleetFlags, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, ff.Duration)
	defer cancel()
	f, err := newFleet(ctx, ff, out)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := &simScaler{f: f, ctx: ctx, max: ff.Nodes, min: ff.AutoscaleStart, gap: ff.ScaleGap, next: ff.AutoscaleStart}
	f.scaler = sc
	if err := f.startNodes(ctx, ff.AutoscaleStart); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d nodes started, up to %d with the autoscaler; budget %s each; saturation after %d scans of %v, idle after %v, cooldown %v\n",
		ff.AutoscaleStart, ff.Nodes, mib(f.budget), ff.SaturationRounds, ff.Scan, ff.IdleAfter, ff.ScaleCooldown)
	t0 := time.Now()
	if err := f.putCatalog(ctx); err != nil {
		return err
	}
	var stallReady, stallTotal int
	var stallAt time.Duration
	if ff.Autoscale == "both" {
		stallReady, stallTotal, stallAt, err = f.waitStall(ctx, t0, 3*ff.TTL)
		if err != nil {
			return err
		}
		if stallReady == stallTotal {
			return fmt.Errorf("autoscale off: %d nodes covered all %d repos; no saturation to act on (raise -nodes or lower -autoscale-start)", ff.AutoscaleStart, stallTotal)
		}
		fmt.Fprintf(out, "autoscale off: %d nodes cover %d/%d repos; no repo became ready after t=%v\n",
			ff.AutoscaleStart, stallReady, stallTotal, stallAt.Round(100*time.Millisecond))
	}
	t1 := time.Now()
	sc.acting.Store(true)
	rows, err := f.waitCoverage(ctx, t1, nil)
	if err != nil {
		return err
	}
	covered := time.Since(t1)
	sc.mu.Lock()
	started := len(sc.started)
	live := sc.live()
	sc.mu.Unlock()
	fmt.Fprintf(out, "autoscale on: full coverage (%d repos) %v after the autoscaler began acting (%v after the catalog put); %d nodes started, %d live\n",
		len(rows), covered.Round(10*time.Millisecond), time.Since(t0).Round(10*time.Millisecond), started, live)

	// A spare node finds nothing to claim and asks to be stopped.
	spare := nodeName(sc.nextName())
	c, err := f.startNode(ctx, spare)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.nodes = append(f.nodes, c)
	f.mu.Unlock()
	ts := time.Now()
	fmt.Fprintf(out, "started a spare %s (pid %d) with nothing to claim\n", spare, c.cmd.Process.Pid)
	var shrunk time.Duration
	for deadline := ts.Add(ff.IdleAfter + 2*ff.ScaleCooldown + 30*time.Second); ; {
		if c.Exited() {
			shrunk = time.Since(ts)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("spare %s not stopped by %v: no shrink decision", spare, deadline.Format(time.TimeOnly))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	sc.mu.Lock()
	rep := autoscaleReport{
		Repos: len(rows), Start: ff.AutoscaleStart, Max: ff.Nodes, StallReady: stallReady, StallTotal: stallTotal, StallAt: stallAt,
		Covered: covered, Started: slices.Clone(sc.started), Stopped: slices.Clone(sc.stopped), Spare: spare, Shrunk: shrunk,
		Asked: maps.Clone(sc.asked), Errs: slices.Clone(sc.errs),
	}
	sc.mu.Unlock()
	if rows, err = f.rows(ctx); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Owner == spare {
			rep.SpareHeld++
		}
	}
	fmt.Fprint(out, "\n"+rep.String())
	if len(rep.Errs) > 0 {
		return fmt.Errorf("autoscaler could not start nodes: %v", rep.Errs)
	}
	return f.stopNodes()
}

// nextName takes the next node index.
func (s *simScaler) nextName() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.next
	s.next++
	return i
}

// waitStall polls the catalog until every row is ready or none has become
// ready for quiet: what a fleet that never grows reaches.
func (f *fleet) waitStall(ctx context.Context, t0 time.Time, quiet time.Duration) (ready, total int, lastGain time.Duration, err error) {
	best, since := -1, time.Now()
	for {
		all, err := f.rows(ctx)
		if err != nil {
			return 0, 0, 0, err
		}
		rows := slices.DeleteFunc(all, func(r lease.Row) bool { return !f.fits(r) })
		ready, _, _ = coverage(rows, nil)
		if ready > best {
			best, since = ready, time.Now()
			lastGain = time.Since(t0)
		}
		if ready == len(rows) || time.Since(since) >= quiet {
			return ready, len(rows), lastGain, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// autoscaleReport is what `fleet sim -autoscale` found.
type autoscaleReport struct {
	Repos, Start, Max      int
	StallReady, StallTotal int
	StallAt, Covered       time.Duration
	Started, Stopped       []string
	Spare                  string
	SpareHeld              int
	Shrunk                 time.Duration
	Asked                  map[string]int
	Errs                   []error
}

func (r autoscaleReport) String() string {
	var b []byte
	b = fmt.Appendf(b, "== fleet sim -autoscale: %d repos, %d nodes at the start, at most %d ==\n", r.Repos, r.Start, r.Max)
	if r.StallTotal > 0 {
		b = fmt.Appendf(b, "without acting: %d/%d repos ready (%.0f%%), no gain after t=%v: saturated\n",
			r.StallReady, r.StallTotal, 100*float64(r.StallReady)/float64(r.StallTotal), r.StallAt.Round(100*time.Millisecond))
	}
	b = fmt.Appendf(b, "acting on grow: full coverage after %v, %d nodes started (%v)\n", r.Covered.Round(10*time.Millisecond), len(r.Started), r.Started)
	b = fmt.Appendf(b, "decisions logged by the nodes: %d grow, %d shrink; stopped on shrink: %v\n", r.Asked["grow"], r.Asked["shrink"], r.Stopped)
	b = fmt.Appendf(b, "spare %s held %d repos and stopped itself %v after its start (idle, nothing waiting)\n", r.Spare, r.SpareHeld, r.Shrunk.Round(100*time.Millisecond))
	return string(b)
}
