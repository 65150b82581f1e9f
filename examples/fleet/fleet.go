package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/examples/internal/etcdserver"
	"github.com/indexkit/indexkit/lease"
)

// fleetFlags are the flags demo and sim share.
type fleetFlags struct {
	storeFlags
	EtcdMembers int // members of the etcd demo and sim start without -etcd
	Prefix      string
	Nodes       int
	Repos       int
	MinSize     byteSize
	MaxSize     byteSize
	Budget      byteSize // 0: from the catalog's estimates
	Seed        uint64
	Duration    time.Duration
	Verbose     bool
	Oversize    int           // catalog rows larger than every node's budget: starved
	Steady      time.Duration // sim: the quiet window over which the store's load is measured
	// Rehydration is how the nodes use snapshots: "off" (none written or
	// loaded), "on" (written to a directory the nodes share, and loaded),
	// or, for sim, "both": written, and loaded only from the second kill
	// on (see runSim).
	Rehydration string
	// Autoscale, for sim: "off" (the kill run), "on" (start
	// AutoscaleStart nodes and act on their autoscalers' decisions) or
	// "both" (ignore them until coverage stalls, then act); see
	// runAutoscaleSim.
	Autoscale        string
	AutoscaleStart   int
	ScaleGap         time.Duration // the least time between two starts
	SaturationRounds int
	IdleAfter        time.Duration
	ScaleCooldown    time.Duration
	tuning
}

func (f *fleetFlags) register(fs *flag.FlagSet) {
	f.storeFlags.register(fs, `Redis address (-store redis); "" starts a redis-server on a free loopback port`,
		`comma-separated etcd endpoints (-store etcd); "" starts an etcd of -etcd-members on free loopback ports`)
	fs.IntVar(&f.EtcdMembers, "etcd-members", f.EtcdMembers, "members of the etcd started without -etcd (-store etcd)")
	fs.StringVar(&f.Prefix, "prefix", f.Prefix, "key prefix base; a random suffix is added and the keys are deleted at the end")
	fs.IntVar(&f.Nodes, "nodes", f.Nodes, "fleet nodes to start, as child processes")
	fs.IntVar(&f.Repos, "repos", f.Repos, "git repositories to generate")
	fs.Var(&f.MinSize, "min-size", "smallest repo text size (bytes, KiB, MiB)")
	fs.Var(&f.MaxSize, "max-size", "largest repo text size; sizes are log-uniform in between")
	fs.Var(&f.Budget, "budget", "memory budget of each node; 0: enough for the catalog on nodes-1 nodes, with 50% slack")
	fs.Uint64Var(&f.Seed, "seed", f.Seed, "seed of the generated repos")
	fs.DurationVar(&f.Duration, "duration", f.Duration, "bound on the whole run")
	fs.BoolVar(&f.Verbose, "v", f.Verbose, "echo the nodes' log lines")
	fs.IntVar(&f.Oversize, "oversize", f.Oversize, "extra catalog rows too large for every node's budget, which the nodes report starved")
	fs.StringVar(&f.Rehydration, "rehydration", f.Rehydration, `snapshots of the indexes in a directory the nodes share: "on" (written and loaded), "off" (none), or for sim "both" (two kills: the first with loading off, the second with it on)`)
	fs.StringVar(&f.Autoscale, "autoscale", f.Autoscale, `sim: "on" starts -autoscale-start nodes with the agent's autoscaler and acts on its decisions (a grow starts a node, up to -nodes; a shrink stops the node that asked), "both" ignores them until coverage stalls first, "off" runs the kill sim`)
	fs.IntVar(&f.AutoscaleStart, "autoscale-start", f.AutoscaleStart, "sim -autoscale: nodes at the start")
	fs.DurationVar(&f.ScaleGap, "scale-gap", f.ScaleGap, "sim -autoscale: the least time between two node starts")
	fs.IntVar(&f.SaturationRounds, "saturation-rounds", f.SaturationRounds, "sim -autoscale: the nodes' -saturation-rounds")
	fs.DurationVar(&f.IdleAfter, "idle-after", f.IdleAfter, "sim -autoscale: the nodes' -idle-after")
	fs.DurationVar(&f.ScaleCooldown, "scale-cooldown", f.ScaleCooldown, "sim -autoscale: the nodes' -scale-cooldown")
	fs.DurationVar(&f.Steady, "steady", f.Steady, "sim: after full coverage, measure the store's requests per second over this window, while the sim sends none (0: skip)")
	f.tuning.register(fs)
}

func (f *fleetFlags) parse(name string, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleet "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	describe(fs, name)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("fleet %s: unexpected arguments %q", name, fs.Args())
	case f.Nodes < 2:
		return fmt.Errorf("-nodes %d: want at least 2", f.Nodes)
	case f.Repos < 1:
		return fmt.Errorf("-repos %d: want at least 1", f.Repos)
	case f.MinSize < 1 || f.MaxSize < f.MinSize:
		return fmt.Errorf("-min-size %d, -max-size %d: want 0 < min ≤ max", f.MinSize, f.MaxSize)
	case f.Duration <= 0:
		return errors.New("-duration must be positive")
	case f.Replicas >= f.Nodes:
		return fmt.Errorf("-replicas %d: want fewer than -nodes %d, so that copies survive the loss of a node", f.Replicas, f.Nodes)
	case f.Prefix == "":
		return errors.New("-prefix is empty")
	case f.Rehydration != "on" && f.Rehydration != "off" && (name != "sim" || f.Rehydration != "both"):
		return fmt.Errorf("-rehydration %q: want on, off%s", f.Rehydration, map[bool]string{true: " or both", false: ""}[name == "sim"])
	case f.Autoscale != "off" && f.Autoscale != "" && (name != "sim" || (f.Autoscale != "on" && f.Autoscale != "both")):
		return fmt.Errorf("-autoscale %q: want off, on or both (sim only)", f.Autoscale)
	case f.Autoscale != "off" && f.Autoscale != "" && (f.AutoscaleStart < 1 || f.AutoscaleStart >= f.Nodes):
		return fmt.Errorf("-autoscale-start %d: want 1 to -nodes-1 (%d)", f.AutoscaleStart, f.Nodes-1)
	case f.SaturationRounds < 0 || f.IdleAfter < 0 || f.ScaleCooldown < 0 || f.ScaleGap < 0:
		return errors.New("-saturation-rounds, -idle-after, -scale-cooldown and -scale-gap must not be negative")
	case f.Steady < 0:
		return fmt.Errorf("-steady %v is negative", f.Steady)
	case f.Oversize < 0:
		return fmt.Errorf("-oversize %d is negative", f.Oversize)
	case f.EtcdMembers < 1:
		return fmt.Errorf("-etcd-members %d: want at least 1", f.EtcdMembers)
	}
	if err := f.storeFlags.check(fs); err != nil {
		return err
	}
	return f.tuning.validateFor(f.Store)
}

// fleet is a local fleet run by demo or sim: a work directory, a Redis
// or an etcd (its own or a given one), generated repos, and node
// processes.
type fleet struct {
	flags  fleetFlags
	out    io.Writer // the report
	bin    string
	work   string
	redis  *redisServer       // started by the fleet, or nil
	etcd   *etcdserver.Server // started by the fleet, or nil
	sf     storeFlags         // the store the nodes use
	prefix string
	b      *backend
	store  fleetnode.Store
	tab    fleetnode.Tables
	repos  []repogen.Repo
	budget int64
	hc     *http.Client

	scaler *simScaler // sim -autoscale: acts on the nodes' decisions

	mu     sync.Mutex
	nodes  []*child
	events []event
}

// newFleet sets up the work directory, Redis and the repos. Close undoes
// it.
func newFleet(ctx context.Context, ff fleetFlags, out io.Writer) (_ *fleet, err error) {
	f := &fleet{flags: ff, out: out, hc: &http.Client{}}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if f.bin, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	if f.work, err = os.MkdirTemp("", "fleet-"); err != nil {
		return nil, err
	}
	f.sf = ff.storeFlags
	switch {
	case f.sf.Store == storeRedis && f.sf.Redis == "":
		if f.redis, err = startRedis(ctx, f.work); err != nil {
			return nil, fmt.Errorf("%w (or give -redis ADDR)", err)
		}
		f.sf.Redis = f.redis.Addr
		fmt.Fprintf(out, "redis-server started on %s (pid %d)\n", f.sf.Redis, f.redis.cmd.Process.Pid)
	case f.sf.Store == storeEtcd && f.sf.Etcd == "":
		if f.etcd, err = etcdserver.Start(ctx, f.work, ff.EtcdMembers); err != nil {
			return nil, fmt.Errorf("%w (or give -etcd ENDPOINTS)", err)
		}
		f.sf.Etcd = f.etcd.Endpoints()
		fmt.Fprintf(out, "etcd started: %d member(s) on %s (pids %v)\n", len(f.etcd.PIDs()), f.sf.Etcd, f.etcd.PIDs())
	}
	f.prefix = randomPrefix(ff.Prefix)
	if f.b, err = dial(ctx, f.sf, 0); err != nil {
		return nil, err
	}
	f.tab = f.b.Tables(f.prefix)
	if f.store, err = f.b.NewStore(f.prefix, ff.StoreOptions(lease.Hooks{})...); err != nil {
		return nil, err
	}
	start := time.Now()
	repoDir := f.work + "/repos"
	if err := os.Mkdir(repoDir, 0o755); err != nil {
		return nil, err
	}
	if f.repos, err = repogen.Generate(ctx, repoDir, ff.Repos, repogen.Sizes{Min: int64(ff.MinSize), Max: int64(ff.MaxSize)}, ff.Seed); err != nil {
		return nil, err
	}
	var text, est int64
	for _, r := range f.repos {
		text += r.Text
		est += estimate(r)
	}
	f.budget = int64(ff.Budget)
	if f.budget == 0 {
		f.budget = (est*int64(ff.Replicas)*3/2/int64(ff.Nodes-1) + 1<<20 - 1) &^ (1<<20 - 1)
	}
	fmt.Fprintf(out, "generated %d bare repos in %v: %s of text, estimated index size %s; budget %s per node; prefix %s\n",
		len(f.repos), time.Since(start).Round(time.Millisecond), mib(text), mib(est), mib(f.budget), f.prefix)
	return f, nil
}

// startFleet is newFleet followed by starting ff.Nodes nodes; on failure
// everything started is stopped.
func startFleet(ctx context.Context, ff fleetFlags, out io.Writer) (*fleet, error) {
	f, err := newFleet(ctx, ff, out)
	if err != nil {
		return nil, err
	}
	if err := f.startNodes(ctx, ff.Nodes); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// startNodes starts n nodes named node-a, node-b, … at once.
func (f *fleet) startNodes(ctx context.Context, n int) error {
	type res struct {
		c   *child
		err error
	}
	results := make([]res, n)
	var wg sync.WaitGroup
	for i := range n {
		name := nodeName(i)
		wg.Go(func() {
			c, err := f.startNode(ctx, name)
			results[i] = res{c, err}
		})
	}
	wg.Wait()
	var errs []error
	f.mu.Lock()
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
		} else {
			f.nodes = append(f.nodes, r.c)
		}
	}
	f.mu.Unlock()
	return errors.Join(errs...)
}

// startNode starts one node named name and returns it; the caller adds
// it to f.nodes.
func (f *fleet) startNode(ctx context.Context, name string) (*child, error) {
	level := "debug" // the bid lines feed the sim's latencies
	var echo io.Writer
	if f.flags.Verbose {
		echo = os.Stderr
	}
	args := append([]string{"node", "-name", name, "-prefix", f.prefix}, f.sf.args()...)
	args = append(append(args,
		"-budget", strconv.FormatInt(f.budget, 10), "-work-dir", f.work, "-log-level", level), f.flags.tuning.args()...)
	if f.flags.Rehydration != "off" {
		// "both" starts with loading off and turns it on through the
		// settings table.
		args = append(args, "-snapshot-dir", filepath.Join(f.work, "snapshots"),
			"-rehydrate="+strconv.FormatBool(f.flags.Rehydration == "on"))
	}
	if f.scaler != nil {
		args = append(args, "-autoscale", "-saturation-rounds", strconv.Itoa(f.flags.SaturationRounds),
			"-idle-after", f.flags.IdleAfter.String(), "-scale-cooldown", f.flags.ScaleCooldown.String())
	}
	return startChild(ctx, f.bin, name, args, f.record, echo)
}

func (f *fleet) record(e event) {
	switch e.Fields["msg"] {
	case "scale":
		if f.scaler != nil {
			f.scaler.decide(e)
		}
	case "bid", "won", "indexed", "reused", "evicted", "lost", "starved":
		f.mu.Lock()
		f.events = append(f.events, e)
		f.mu.Unlock()
	}
}

// eventsSince returns the recorded events at or after t.
func (f *fleet) eventsSince(t time.Time) []event {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := sort.Search(len(f.events), func(i int) bool { return !f.events[i].At.Before(t) })
	return append([]event(nil), f.events[i:]...)
}

func (f *fleet) putCatalog(ctx context.Context) error {
	if err := putCatalog(ctx, f.tab, f.store, f.repos, f.flags.Replicas); err != nil {
		return err
	}
	for i := range f.flags.Oversize {
		need := 2*f.budget + int64(i)
		it := lease.Item{ID: fmt.Sprintf("huge-%04d", i), Commit: f.repos[0].Commit, Size: need, MinBid: need}
		if err := f.store.Put(ctx, it); err != nil {
			return fmt.Errorf("put catalog row: %w", err)
		}
	}
	return nil
}

// fits reports whether a node of the fleet's budget can hold r: the rows
// that are not are starved, left out of coverage.
func (f *fleet) fits(r lease.Row) bool { return max(r.Size, r.MinBid) <= f.budget }

// starved returns, for each starved repo the live nodes report in GET
// /status, how many of them report it.
func (f *fleet) starved(ctx context.Context) (map[string]int, map[string]int64, int) {
	f.mu.Lock()
	nodes := append([]*child(nil), f.nodes...)
	f.mu.Unlock()
	by, need, asked := map[string]int{}, map[string]int64{}, 0
	for _, c := range nodes {
		if c.Exited() {
			continue
		}
		st, err := c.status(ctx, f.hc)
		if err != nil {
			continue
		}
		asked++
		for _, s := range st.Starved {
			by[s.Item]++
			need[s.Item] = s.Need
		}
	}
	return by, need, asked
}

// rows reads every catalog row.
func (f *fleet) rows(ctx context.Context) ([]lease.Row, error) {
	var out []lease.Row
	for r, err := range f.store.Rows(ctx) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// coverage counts the rows that are ready at a live node.
func coverage(rows []lease.Row, dead map[string]bool) (ready, warming, unassigned int) {
	for _, r := range rows {
		switch {
		case r.Owner == "" || dead[r.Owner]:
			unassigned++
		case r.Ready:
			ready++
		default:
			warming++
		}
	}
	return ready, warming, unassigned
}

// stopNodes sends SIGTERM to every node still running and waits.
func (f *fleet) stopNodes() error {
	f.mu.Lock()
	nodes := append([]*child(nil), f.nodes...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, c := range nodes {
		if c.Exited() {
			continue
		}
		wg.Go(func() { errs[i] = c.Stop(f.flags.TTL + 30*time.Second) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close stops everything the fleet started, deletes its keys, and
// removes the work directory.
func (f *fleet) Close() {
	f.mu.Lock()
	nodes := f.nodes
	f.mu.Unlock()
	for _, c := range nodes {
		if !c.Exited() {
			c.Kill()
		}
	}
	if f.store != nil {
		_ = f.store.Close()
	}
	if f.b != nil {
		if f.redis == nil && f.etcd == nil && f.prefix != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = f.b.DeletePrefix(ctx, f.prefix)
			cancel()
		}
		_ = f.b.Close()
	}
	if f.redis != nil {
		f.redis.Stop()
	}
	if f.etcd != nil {
		f.etcd.Stop()
	}
	if f.work != "" {
		_ = os.RemoveAll(f.work)
	}
}

func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
