package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/localpool/rolemain"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

func main() {
	rolemain.Run() // --processes re-executes this binary as each role
	// A reader of stdout that goes away (`pool | tee log`, tee killed by
	// Ctrl-C) must not kill the program at its next line by SIGPIPE,
	// skipping the end check and leaving the data directory: writes fail
	// instead (the view ignores their errors) and the run goes on.
	signal.Ignore(syscall.SIGPIPE)
	// The first SIGINT or SIGTERM ends the show and starts the end check;
	// a second one cuts the end check short; a third one kills the
	// process as by default.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, end := context.WithCancel(context.Background())
	abort := make(chan struct{})
	go func() {
		<-sigs
		end()
		<-sigs
		close(abort)
		signal.Stop(sigs)
	}()
	err := run(ctx, abort, os.Args[1:], os.Stdout, os.Stderr)
	end()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode is the exit status of a run that returned err (see doc.go):
// 0 for nil and -h, [exitIncomplete] when the end check found the pool
// incomplete, [exitError] otherwise; it writes err to stderr.
func exitCode(err error, stderr io.Writer) int {
	if errors.Is(err, errIncomplete) {
		fmt.Fprintln(stderr, "pool:", err)
		return exitIncomplete
	}
	if code := cli.ExitCode("pool", err, stderr); code != 0 {
		return exitError
	}
	return 0
}

// options are the command line.
type options struct {
	duration     time.Duration
	refresh      time.Duration
	publishers   int
	indexers     int
	replication  int
	store        string
	dir          string
	processes    bool
	interval     time.Duration
	entries      int
	freezeBudget int64
	malicious    string
	logLevel     string
	probeTimeout time.Duration
	checkTimeout time.Duration
	checkMin     time.Duration
	checkMax     time.Duration
	sharded      bool
	queryNodes   int
	shardRepl    int
	joinAfter    time.Duration
	layoutStore  string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("pool", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: pool [flags]")
		fmt.Fprintln(fs.Output(), "Runs a whole local IPNI pool (publishers, assigner, indexers, front end, piece sampler) and shows it live until Ctrl-C or --duration, then checks it (see go doc). Flags:")
		fs.PrintDefaults()
	}
	fs.DurationVar(&o.duration, "duration", 0, "run this long, then print a summary and stop (0: until Ctrl-C)")
	fs.DurationVar(&o.refresh, "refresh", 2*time.Second, "time between two views of the pool")
	fs.IntVar(&o.publishers, "publishers", localpool.DefaultPublishers, "generated honest publishers")
	fs.IntVar(&o.indexers, "indexers", localpool.DefaultIndexers, "indexer nodes")
	fs.IntVar(&o.replication, "replication", localpool.DefaultReplication, "indexers per publisher")
	fs.StringVar(&o.store, "store", localpool.DefaultStore, "index backend of the indexers: pebble, leveldb or memory")
	fs.StringVar(&o.dir, "dir", "", "data directory of the pool, kept at exit (default: a temporary directory, removed at exit)")
	fs.BoolVar(&o.processes, "processes", false, "run each role as its own OS process instead of a goroutine")
	fs.DurationVar(&o.interval, "interval", localpool.DefaultInterval, "time between two ads of each publisher")
	fs.IntVar(&o.entries, "entries", localpool.DefaultEntries, "multihashes per ad")
	fs.Int64Var(&o.freezeBudget, "freeze-budget", localpool.DefaultFreezeBudget, "disk budget of indexer-0 in bytes, which freezes it at 90% (0: no freeze)")
	fs.StringVar(&o.malicious, "malicious", "", "comma-separated faults of extra malicious publishers: bad-signature, corrupt, huge")
	fs.StringVar(&o.logLevel, "log-level", "warn", "level of the roles' log lines on stderr: debug, info, warn or error")
	fs.DurationVar(&o.probeTimeout, "probe-timeout", 10*time.Second, "deadline of the live probes and piece sample of every third view")
	fs.DurationVar(&o.checkTimeout, "check-timeout", 0, "how long the end check waits for complete answers (0: scaled with the work, between --check-min and --check-max)")
	fs.DurationVar(&o.checkMin, "check-min", defaultCheckMin, "least wait of the end check when it is scaled with the work")
	fs.DurationVar(&o.checkMax, "check-max", defaultCheckMax, "longest wait of the end check when it is scaled with the work")
	fs.BoolVar(&o.sharded, "sharded", false, "run the keyspace-sharded layers: the indexers ingest into query nodes, each holding its ranges of the keyspace, and the front end asks each key's owners")
	fs.IntVar(&o.queryNodes, "query-nodes", 4, "query nodes at start (with --sharded)")
	fs.IntVar(&o.shardRepl, "shard-replication", 2, "owners of each multihash among the query nodes (with --sharded)")
	fs.DurationVar(&o.joinAfter, "join-after", 20*time.Second, "add a query node this long into the run, live (with --sharded; 0: never)")
	fs.StringVar(&o.layoutStore, "layout-store", "auto", "where a sharded pool keeps its layout (with --sharded): etcd (a member the pool starts), file (a layout file, SIGHUP to reload), or auto: etcd when it is installed")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.probeTimeout <= 0 || o.checkTimeout < 0 || o.checkMin < 0 || o.checkMax <= 0 || o.checkMin > o.checkMax {
		return nil, errors.New("--probe-timeout and --check-max must be positive, --check-timeout and --check-min not negative, --check-min at most --check-max")
	}
	return o, nil
}

// run is the program: it starts the pool, shows it until ctx is done or
// --duration has passed, runs the end check (see summary; closing abort
// cuts it short), prints its result and stops the pool. It returns
// errIncomplete when the end check found the pool incomplete.
func run(ctx context.Context, abort <-chan struct{}, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level, err := cli.ParseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := cli.NewLogger(stderr, level)
	var faults []publishernode.Fault
	for f := range strings.SplitSeq(o.malicious, ",") {
		if f = strings.TrimSpace(f); f != "" {
			var fault publishernode.Fault
			if err := fault.UnmarshalText([]byte(f)); err != nil {
				return fmt.Errorf("-malicious: %w", err)
			}
			faults = append(faults, fault)
		}
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "indexkit-pool-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	cfg := localpool.Config{
		Dir: dir, Publishers: o.publishers, Indexers: o.indexers, Replication: o.replication, Store: o.store,
		Processes: o.processes, Interval: o.interval, Entries: o.entries, FreezeBudget: o.freezeBudget,
		Malicious: faults, Log: stderr, LogLevel: level, Logger: log,
	}
	if o.sharded {
		cfg.Sharded = &localpool.Sharded{QueryNodes: o.queryNodes, Replication: o.shardRepl}
		switch o.layoutStore {
		case "etcd":
			cfg.Sharded.Etcd = localpool.EtcdStart
		case "auto":
			if localpool.EtcdAvailable() {
				cfg.Sharded.Etcd = localpool.EtcdStart
			}
		case "file":
		default:
			return fmt.Errorf("--layout-store %q: want auto, etcd or file", o.layoutStore)
		}
	}
	fmt.Fprintf(stdout, "starting a pool in %s: %d publishers, %d indexers on %s, %s\n",
		dir, o.publishers, o.indexers, o.store, map[bool]string{false: "in goroutines", true: "one process per role"}[o.processes])
	if o.duration > 0 {
		fmt.Fprintf(stdout, "it runs for %v, then checks the pool and stops (Ctrl-C stops it sooner)\n", o.duration)
	} else {
		fmt.Fprintln(stdout, "it runs until Ctrl-C (--duration 2m: for 2 minutes), then checks the pool and stops")
	}
	p, err := localpool.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := p.Close(); cerr != nil {
			log.Error("stopping the pool", "err", cerr)
		}
	}()
	if o.sharded {
		printShards(stdout, p, o)
	}
	cctx, cancel := context.WithTimeout(ctx, o.probeTimeout)
	look := pickLookup(cctx, p, lookupHorizon(o))
	cancel()
	printURLs(stdout, p.URLs(), look, o.duration > 0, filepath.Join(p.Config().Dir, localpool.AdminTokenFile), o.freezeBudget)
	var pc publishernode.Piece
	havePiece := false
	// repick picks the piece to sample, printing its curl when it changes:
	// until publisher-0 has published an ad naming its piece in the
	// ContextID, one named in metadata.
	repick := func(ctx context.Context) {
		if havePiece && pc.InContextID {
			return
		}
		next, ok := pickPiece(ctx, p)
		if !ok || (havePiece && next.Piece == pc.Piece) {
			return
		}
		pc, havePiece = next, true
		where := "graphsync metadata"
		if pc.InContextID {
			where = "its ContextID, as Curio writes it"
		}
		fmt.Fprintf(stdout, "  curl '%s'\n      # piece sampler: a signed sample of payloads of piece %s of publisher-0 (named in %s)\n",
			p.SampleURL(pc, pieceSeed, pieceSamples), short(pc.Piece), where)
	}
	repick(ctx)

	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	v := newView(stdout)
	start := time.Now()
	joined := make(chan error, 1)
	if o.sharded && o.joinAfter > 0 {
		// A query node joins during the run: the view shows its copy,
		// the reads moving to it and the old owners dropping.
		go func() {
			select {
			case <-ctx.Done():
				joined <- nil
				return
			case <-time.After(o.joinAfter):
			}
			name, err := p.AddQueryNode(ctx, func(a keyspace.Action) {
				fmt.Fprintf(stdout, "RING %s: %s\n", a.Kind, a.Why)
			})
			if err == nil {
				fmt.Fprintf(stdout, "RING %s joined: it owns its ranges, the old owners dropped them\n", name)
			}
			joined <- err
		}()
	}
	t := time.NewTicker(o.refresh)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return summary(p, stdout, o, abort, time.Since(start), pc, havePiece)
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, o.refresh)
		s, err := p.Snapshot(sctx)
		cancel()
		if err == nil && ctx.Err() == nil {
			v.render(s, time.Since(start).Round(time.Second).String())
		}
		if o.sharded && ctx.Err() == nil {
			sctx, cancel := context.WithTimeout(ctx, o.refresh)
			if ss, err := p.ShardSnapshot(sctx); err == nil {
				v.shards(ss)
			}
			cancel()
		}
		select {
		case err := <-joined:
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(stdout, "RING join failed: %v\n", err)
			}
		default:
		}
		if tick%3 == 0 && ctx.Err() == nil {
			// The probes read the whole truth and ask every indexer: they
			// get their own deadline, not the refresh interval.
			pctx, cancel := context.WithTimeout(ctx, o.probeTimeout)
			ps, err := probes(pctx, p)
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(stdout, "  probes: %v\n", err)
			}
			v.probes(ps)
			if repick(pctx); havePiece {
				v.piece(p.SamplePiece(pctx, pc, pieceSeed, pieceSamples))
			}
			cancel()
		}
	}
}

// printURLs prints where to look: the front end's page first, then the
// URLs to curl. look is the CID they look up (cid.Undef when no
// publisher had one: the lines then hold a <cid> to fill in); bounded
// says the run has a --duration, so that look lasts for all of it.
func printURLs(w io.Writer, u localpool.URLs, look lookup, bounded bool, tokenFile string, budget int64) {
	key, q, holder := "<cid>", "", "a publisher"
	if look.cid.Defined() {
		key, q, holder = look.cid.String(), "#q="+look.cid.String(), "publisher-"+strconv.Itoa(look.publisher)
	}
	fmt.Fprintf(w, "the pool is up; open its page in a browser (look up a CID, watch the pool live):\n  %s/%s\n", u.Find, q)
	if look.cid.Defined() {
		lasts := "for the whole run"
		if !bounded {
			lasts = fmt.Sprintf("for its first %d ads at least", look.horizon)
		}
		fmt.Fprintf(w, "  (the CID is a multihash of %s's ad %d, which it keeps %s: no later ad removes or updates it)\n", holder, look.ad, lasts)
	}
	fmt.Fprintln(w, "or try:")
	fmt.Fprintf(w, "  curl %s/routing/v1/providers/%s   # Delegated Routing V1 (Kubo, Helia, boxo): who provides a CID of %s\n", u.Find, key, holder)
	fmt.Fprintf(w, "  curl %s/status.json                    # the page's JSON: indexers, lookups, publishers, handoffs\n", u.Find)
	fmt.Fprintf(w, "  curl %s/providers                      # find API (scatter front end): providers\n", u.Find)
	if len(u.Publishers) > 0 {
		fmt.Fprintf(w, "  curl '%s/truth?entries=1' | head -c 600   # a publisher's ground truth: pick a multihash\n", u.Publishers[0])
	}
	fmt.Fprintf(w, "  curl %s/multihash/<multihash>            # find API: who provides it\n", u.Find)
	fmt.Fprintf(w, "  curl %s/assignments                    # assigner: publishers, indexers, handoffs\n", u.AssignerState)
	for _, ix := range u.Indexers {
		fmt.Fprintf(w, "  curl -H \"Authorization: Bearer $(cat %s)\" %s/status   # %s admin API (also /ingest/assigned, /ingest/status)\n",
			tokenFile, ix.Admin, ix.Name)
	}
	fmt.Fprintf(w, "  curl %s/ingestion-status/<provider>   # piece sampler API\n", u.Piece)
	if budget > 0 {
		fmt.Fprintf(w, "indexer-0 has a disk budget of %d bytes: it freezes at 90%% of it, and its publishers are handed off\n", budget)
	}
	fmt.Fprintln(w, "Ctrl-C stops the pool.")
}

// printShards says that the pool is sharded and where its index lives:
// the query nodes' find APIs, each answering for the keys it owns.
func printShards(w io.Writer, p *localpool.Pool, o *options) {
	l, err := p.Layout()
	if err != nil {
		fmt.Fprintf(w, "sharded: no layout to show: %v\n", err)
		return
	}
	join := ""
	if o.joinAfter > 0 {
		join = fmt.Sprintf("; one more joins after %v", o.joinAfter)
	}
	ingest := fmt.Sprintf("the %d indexers are ingest nodes", len(p.Indexers()))
	if len(p.Indexers()) == 1 {
		ingest = "the indexer is an ingest node"
	}
	fmt.Fprintf(w, "sharded: %s (no index of their own); the index lives on %d query nodes, %d owners per multihash%s:\n",
		ingest, len(l.Nodes), l.Replication, join)
	if p.OnEtcd() {
		fmt.Fprintf(w, "  the layout is in etcd, %s: every role watches it and keeps its status there; the coordinator is elected\n", p.LayoutSpec())
	} else {
		fmt.Fprintf(w, "  the layout is the file %s (no etcd installed: apt-get install etcd-server for the etcd control plane)\n", p.LayoutSpec())
	}
	for _, n := range l.Nodes {
		fmt.Fprintf(w, "  curl %s/multihash/<multihash>   # %s's find API: the multihashes it owns\n", n.URL, n.Name)
	}
}

// probes picks two multihashes of each honest publisher's truth, the
// first and the last in multihash order (so of any age: once a publisher
// has been handed off, some are held by the frozen indexer, some by the
// active one), and asks the front end and the nodes that hold the index
// (every indexer, or in a sharded pool the query nodes owning the key).
func probes(ctx context.Context, p *localpool.Pool) ([]localpool.Probe, error) {
	t, err := p.Truth(ctx)
	if err != nil {
		return nil, fmt.Errorf("no truth to probe: %w", err)
	}
	var out []localpool.Probe
	for _, pt := range t.Publishers {
		if len(pt.Entries) == 0 {
			continue
		}
		picks := []publishernode.Entry{pt.Entries[0]}
		if len(pt.Entries) > 1 {
			picks = append(picks, pt.Entries[len(pt.Entries)-1])
		}
		for _, e := range picks {
			out = append(out, p.Probe(ctx, e))
		}
	}
	return out, nil
}

// lookup is the CID the banner's page URL and curls look up.
type lookup struct {
	cid       cid.Cid // cid.Undef: none found
	publisher int     // index of the honest publisher that holds it
	ad        int     // its ad (from 1) that first advertises it
	horizon   int     // the ads up to which it keeps it
}

// maxHorizon bounds lookupHorizon: finding a lasting multihash costs
// about half a second per million ads.
const maxHorizon = 1_000_000

// lookupHorizon is how many ads each publisher has by the end of the run,
// with room to spare: its first, and one each --interval for twice
// --duration (the end check halts the publishers), or for a day without
// --duration; at most maxHorizon.
func lookupHorizon(o *options) int {
	run := 24 * time.Hour
	if o.duration > 0 {
		run = 2 * o.duration
	}
	if o.interval <= 0 {
		return maxHorizon
	}
	return int(min(maxHorizon, 1+int64(run/o.interval)+10))
}

// pickLookup picks the CID (v1, raw) the demo's first lookups name: of
// the honest publishers' multihashes that they keep up to horizon ads
// (publishernode.Spec.Lasting: no removal or update touches them, so the
// lookup stays valid while the random removals go on), the one advertised
// earliest; it waits, up to ctx, until its publisher has published it.
// With none found, the lookup's cid is cid.Undef.
func pickLookup(ctx context.Context, p *localpool.Pool, horizon int) lookup {
	best := lookup{publisher: -1}
	for i := range p.URLs().Publishers {
		spec, err := p.PublisherSpec(localpool.RolePublishers, i, 0)
		if err != nil {
			continue
		}
		mh, ad, ok, err := spec.Lasting(horizon)
		if err != nil || !ok || (best.publisher >= 0 && ad >= best.ad) {
			continue
		}
		best = lookup{cid: cid.NewCidV1(cid.Raw, mh), publisher: i, ad: ad, horizon: horizon}
	}
	if best.publisher < 0 {
		return lookup{}
	}
	for {
		t, err := p.PublisherTruth(ctx, best.publisher)
		if err == nil && t.Ads >= best.ad {
			return best
		}
		select {
		case <-ctx.Done():
			return best // printed all the same: it comes with that ad
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pieceSeed and pieceSamples are the seed and size of the demo's piece
// samples.
const (
	pieceSeed    = "demo"
	pieceSamples = 5
)

// pickPiece picks the piece the demo samples: the first of publisher-0's
// truth named in a ContextID, else its first piece.
func pickPiece(ctx context.Context, p *localpool.Pool) (publishernode.Piece, bool) {
	u := p.URLs()
	if len(u.Publishers) == 0 {
		return publishernode.Piece{}, false
	}
	pieces, err := p.Pieces(ctx)
	if err != nil {
		return publishernode.Piece{}, false
	}
	var first *publishernode.Piece
	for i, pc := range pieces {
		if pc.Provider != pieces[0].Provider { // publisher-0's come first
			break
		}
		if pc.InContextID {
			return pc, true
		}
		if first == nil {
			first = &pieces[i]
		}
	}
	if first == nil {
		return publishernode.Piece{}, false
	}
	return *first, true
}
