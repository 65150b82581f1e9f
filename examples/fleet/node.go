package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/internal/cli"
)

// tuning is the lease timing every node of a fleet shares, as flags:
// demo and sim pass theirs to the nodes they start.
type tuning struct{ fleetnode.Timing }

func defaultTuning() tuning { return tuning{fleetnode.DefaultTiming()} }

func (t *tuning) register(fs *flag.FlagSet) { registerTiming(fs, &t.Timing) }

// registerTiming defines the flags of t's fields on fs.
func registerTiming(fs *flag.FlagSet, t *fleetnode.Timing) {
	fs.DurationVar(&t.TTL, "ttl", t.TTL, "lease time to live")
	fs.DurationVar(&t.Window, "window", t.Window, "auction window (the backstop)")
	fs.DurationVar(&t.Liveness, "liveness", t.Liveness, "a node is live if it heartbeated within this")
	fs.DurationVar(&t.Heartbeat, "heartbeat", t.Heartbeat, "heartbeat interval")
	fs.DurationVar(&t.Scan, "scan", t.Scan, "mean interval between scans for claimable items")
	fs.IntVar(&t.MaxBids, "max-bids", t.MaxBids, "bids that close an auction at once; 0: the number of live nodes")
	fs.IntVar(&t.IndexConcurrency, "index-concurrency", t.IndexConcurrency, "concurrent clones+indexing per node")
	fs.DurationVar(&t.BackoffBase, "backoff", t.BackoffBase, "base of the backoff after a lost or rejected bid")
	fs.DurationVar(&t.BackoffMax, "backoff-max", t.BackoffMax, "cap of that backoff")
	fs.IntVar(&t.Replicas, "replicas", t.Replicas, "copies of each repo on different nodes; reads fall back to a ready replica")
	fs.DurationVar(&t.VerifyEvery, "verify-every", t.VerifyEvery, "interval of the check of every index against the checksum taken when it was built; a corrupted one is dropped and rebuilt (0: never)")
	fs.BoolVar(&t.Feed, "feed", t.Feed, "learn of catalog changes from the store's change feed, listing the catalog only to reconcile; false: list it at every scan")
	fs.DurationVar(&t.Reconcile, "reconcile", t.Reconcile, "interval of the full catalog listings under the feed; 0: half the TTL, at most 30s")
	fs.BoolVar(&t.LossGuard, "loss-guard", t.LossGuard, "hold grants for one TTL after the catalog is found gone, so no repo is granted while a holder from before a Redis data loss still serves it (for a Redis without durable writes; a fresh catalog's first grants wait one TTL too)")
}

// timingFlags names the flag of each Timing field, for error messages.
var timingFlags = map[string]string{
	"TTL": "-ttl", "Window": "-window", "Liveness": "-liveness", "Heartbeat": "-heartbeat", "Scan": "-scan",
	"MaxBids": "-max-bids", "IndexConcurrency": "-index-concurrency", "BackoffBase": "-backoff", "BackoffMax": "-backoff-max",
	"Replicas": "-replicas", "Reconcile": "-reconcile", "VerifyEvery": "-verify-every",
}

// args returns the flags that give a node t.
func (t tuning) args() []string {
	return []string{
		"-ttl", t.TTL.String(), "-window", t.Window.String(), "-liveness", t.Liveness.String(),
		"-heartbeat", t.Heartbeat.String(), "-scan", t.Scan.String(), "-max-bids", strconv.Itoa(t.MaxBids),
		"-index-concurrency", strconv.Itoa(t.IndexConcurrency),
		"-backoff", t.BackoffBase.String(), "-backoff-max", t.BackoffMax.String(),
		"-replicas", strconv.Itoa(t.Replicas), "-loss-guard=" + strconv.FormatBool(t.LossGuard),
		"-feed=" + strconv.FormatBool(t.Feed), "-reconcile", t.Reconcile.String(),
		"-verify-every", t.VerifyEvery.String(),
	}
}

// validateFor checks t for a fleet on store, with the flags' names in
// its errors.
func (t tuning) validateFor(store string) error {
	flagOf := func(field string) string { return timingFlags[field] }
	if err := t.ValidateNamed(flagOf); err != nil {
		return err
	}
	if store == storeEtcd {
		if err := t.WholeSeconds(flagOf); err != nil {
			return fmt.Errorf("-store etcd: %w", err)
		}
	}
	return nil
}

// byteSize is a flag of bytes: 1048576, 512KiB, 64MiB, 2GiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("want bytes such as 1048576, 512KiB, 64MiB or 2GiB")
	}
	*b = byteSize(n * mult)
	return nil
}

// nodeConfig is what `fleet node` runs: the node's Config, and what only
// the program has (the store to dial, the trace file, the log level).
type nodeConfig struct {
	fleetnode.Config
	Budget    byteSize // into Config.Budget
	Listen    string
	TraceFile string // "": none
	LogLevel  string
	storeFlags
}

func parseNodeFlags(args []string, stderr io.Writer) (nodeConfig, error) {
	host, _ := os.Hostname()
	c := nodeConfig{
		Config: fleetnode.DefaultConfig(), Listen: "127.0.0.1:0", LogLevel: "info",
		storeFlags: storeFlags{Store: storeRedis, Redis: "127.0.0.1:6379", Etcd: "127.0.0.1:2379"},
	}
	c.Name, c.Prefix, c.Budget = fmt.Sprintf("%s-%d", host, os.Getpid()), "fleet:", byteSize(c.Config.Budget)
	fs := flag.NewFlagSet("fleet node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describe(fs, "node")
	fs.StringVar(&c.Name, "name", c.Name, "node name, unique in the fleet")
	c.storeFlags.register(fs, "Redis address of the catalog (-store redis)", "comma-separated etcd endpoints of the catalog (-store etcd)")
	fs.StringVar(&c.Prefix, "prefix", c.Prefix, "key prefix of the catalog and the side tables in the store")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP listen address (port 0: any free port, logged)")
	fs.Var(&c.Budget, "budget", "memory budget for indexes (bytes, or with KiB, MiB, GiB)")
	fs.StringVar(&c.WorkDir, "work-dir", c.WorkDir, "directory for temporary clones (default: the system's)")
	fs.StringVar(&c.SnapshotDir, "snapshot-dir", c.SnapshotDir, "directory of index snapshots, which the nodes of a fleet may share: each built index is written there, and with -rehydrate a won repo is loaded from it (\"\": none)")
	fs.BoolVar(&c.Autoscale, "autoscale", c.Autoscale, "run the agent's autoscaler: log a decision (msg=scale decision=grow|shrink) when items that fit find no room, or when this node has been idle for -idle-after with nothing waiting")
	fs.StringVar(&c.TraceFile, "trace-file", c.TraceFile, "append OpenTelemetry spans (agent.claim, agent.index, agent.serve) to this file as JSON, one object per span (\"\": none)")
	fs.DurationVar(&c.IdleAfter, "idle-after", c.IdleAfter, "with -autoscale: idle time (no lease held, no query served) after which the node asks to be stopped (0: 1m)")
	fs.DurationVar(&c.ScaleCooldown, "scale-cooldown", c.ScaleCooldown, "with -autoscale: quiet time after each decision (0: 30s)")
	fs.IntVar(&c.SaturationRounds, "saturation-rounds", c.SaturationRounds, "scans in a row without a claim before unclaimed items that fit a node count as saturated (0: the agent's default, 20)")
	fs.BoolVar(&c.Rehydrate, "rehydrate", c.Rehydrate, "load the index of a won repo at the row's commit from -snapshot-dir, when there is one, or from the node that handed it off on its SIGTERM, instead of cloning and indexing (false: only write snapshots)")
	fs.Func("git-credential-helper", "a git credential helper for fetching private repositories, added to those git is configured with (repeatable; e.g. 'store --file=/run/secrets/git-credentials', 'cache', or a program's path)", func(v string) error {
		if v == "" {
			return errors.New("empty credential helper")
		}
		c.CredentialHelpers = append(c.CredentialHelpers, v)
		return nil
	})
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "on SIGTERM, how long to wait for in-flight indexing before releasing")
	fs.DurationVar(&c.HandoffWait, "handoff-wait", c.HandoffWait, "on SIGTERM, how long to keep serving the ready indexes this node offers to their next owners (GET /snapshot) until each was fetched (0: offer none)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	registerTiming(fs, &c.Timing)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.Config.Budget = int64(c.Budget)
	if fs.NArg() > 0 {
		return c, fmt.Errorf("fleet node: unexpected arguments %q", fs.Args())
	}
	switch {
	case c.Name == "":
		return c, errors.New("-name is empty")
	case c.Prefix == "":
		return c, errors.New("-prefix is empty")
	case c.Budget <= 0:
		return c, errors.New("-budget must be positive")
	}
	if err := c.storeFlags.check(fs); err != nil {
		return c, err
	}
	return c, tuning{c.Timing}.validateFor(c.Store)
}

// runNode is `fleet node`: it serves until ctx is done, then hands off,
// drains and stops (fleetnode.Node.Run).
func runNode(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseNodeFlags(args, stderr)
	if err != nil {
		return err
	}
	level, err := cli.ParseLevel(cfg.LogLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := cli.NewLogger(stderr, level)
	cfg.Logger = log

	b, err := dial(ctx, cfg.storeFlags, 16)
	if err != nil {
		return err
	}
	defer b.Close()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	n, _, done, err := assemble(cfg, b, ln)
	if err != nil {
		return err
	}
	defer done()
	cli.LogListening(log, "http", n.Addr())
	log.Info("store", "store", cfg.storeFlags.String())
	return n.Run(ctx)
}

// assemble builds the node cfg describes on b, serving on ln: its metrics
// (Prometheus, its own registry, at GET /metrics) and, with a trace file,
// its tracer, whose provider it returns (nil without one). done closes the
// node and flushes the trace file.
func assemble(cfg nodeConfig, b *backend, ln net.Listener) (_ *fleetnode.Node, _ *sdktrace.TracerProvider, done func(), err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := newPromMetrics()
	cfg.Hooks = m.hooks()
	var tp *sdktrace.TracerProvider
	closeTrace := func() {}
	if cfg.TraceFile != "" {
		if tp, closeTrace, err = traceFile(cfg.TraceFile, log); err != nil {
			ln.Close()
			return nil, nil, nil, err
		}
		cfg.Tracer = tp.Tracer("github.com/indexkit/indexkit/examples/fleet")
	}
	var n *fleetnode.Node
	cfg.Routes = map[string]http.Handler{"GET /metrics": m.handler(func() fleetnode.Status { return n.Status() }, log)}
	if n, err = fleetnode.New(cfg.Config, b.Backend, ln); err != nil {
		ln.Close()
		closeTrace()
		return nil, nil, nil, err
	}
	return n, tp, func() { _ = n.Close(); closeTrace() }, nil
}

// traceFile opens path for appending and returns a tracer provider that
// writes spans there as JSON, and the function that flushes and closes
// both: its own provider, never the global one.
func traceFile(path string, log *slog.Logger) (*sdktrace.TracerProvider, func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("-trace-file: %w", err)
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("-trace-file: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := tp.Shutdown(sctx); err != nil {
			log.Warn("trace file", "err", err)
		}
		cancel()
		_ = f.Close()
	}, nil
}
