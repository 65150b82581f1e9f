package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/cli"
)

func main() {
	localpool.RoleMain() // --processes re-executes this binary as each role
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(cli.ExitCode("pool", err, os.Stderr))
	}
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
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("pool", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return o, nil
}

// run is the program: it starts the pool, shows it until ctx is done or
// --duration has passed, prints a summary and stops it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	fmt.Fprintf(stdout, "starting a pool in %s: %d publishers, %d indexers on %s, %s\n",
		dir, o.publishers, o.indexers, o.store, map[bool]string{false: "in goroutines", true: "one process per role"}[o.processes])
	p, err := localpool.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := p.Close(); cerr != nil {
			log.Error("stopping the pool", "err", cerr)
		}
	}()
	printURLs(stdout, p.URLs(), filepath.Join(p.Config().Dir, localpool.AdminTokenFile), o.freezeBudget)
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
	t := time.NewTicker(o.refresh)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			summary(p, stdout, time.Since(start), pc, havePiece)
			return nil
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, o.refresh)
		s, err := p.Snapshot(sctx)
		if err == nil && ctx.Err() == nil {
			v.render(s, time.Since(start).Round(time.Second).String())
		}
		if tick%3 == 0 && ctx.Err() == nil {
			v.probes(probes(sctx, p))
			if repick(sctx); havePiece {
				v.piece(p.SamplePiece(sctx, pc, pieceSeed, pieceSamples))
			}
		}
		cancel()
	}
}

func printURLs(w io.Writer, u localpool.URLs, tokenFile string, budget int64) {
	fmt.Fprintln(w, "the pool is up; try:")
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

// probes picks two multihashes of each honest publisher's truth, the
// first and the last in multihash order (so of any age: once a publisher
// has been handed off, some are held by the frozen indexer, some by the
// active one), and asks the front end and every indexer.
func probes(ctx context.Context, p *localpool.Pool) []localpool.Probe {
	t, err := p.Truth(ctx)
	if err != nil {
		return nil
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
	return out
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

// summary checks the demo's piece through the piece sampler, halts the
// publishers so that their truth holds still, and waits (up to its
// deadline) until the front end answers every multihash of that truth in
// full, printing the result.
func summary(p *localpool.Pool, w io.Writer, ran time.Duration, pc publishernode.Piece, havePiece bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Fprintf(w, "── summary after %s ──\n", ran.Round(time.Second))
	if s, err := p.Snapshot(ctx); err == nil {
		newView(w).render(s, "final")
	}
	if havePiece {
		newView(w).piece(p.SamplePiece(ctx, pc, pieceSeed, pieceSamples))
	}
	// Stop production so that the truth holds still, then give the
	// indexers until the deadline to catch up with the last ads.
	if err := p.HaltPublishers(ctx); err != nil {
		fmt.Fprintln(w, "  halting the publishers:", err)
	}
	c, err := p.WaitComplete(ctx)
	fmt.Fprintf(w, "  publishers halted; every multihash of their truth through the front end: %v\n", c)
	if err != nil {
		fmt.Fprintln(w, "  not complete within the summary's deadline:", err)
		for _, e := range c.Examples {
			fmt.Fprintln(w, "   ", e)
		}
	}
}
