package coordcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/querycmd"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// Main runs the coordinator command (see the package documentation).
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: coordinator -layout etcd://HOST:PORT/PREFIX [-join NAME=URL | -leave NAME] [flags]")
		fmt.Fprintln(fs.Output(), "Drives one membership change of a keyspace-sharded query layer: campaigns to be its coordinator, then adds or removes a query node (or, with neither, finishes the change in progress), and exits 0 when the old owners have dropped what they no longer own.")
		fs.PrintDefaults()
	}
	host, _ := os.Hostname()
	var spec, join, leave, seed, tokenFile, ingest, fronts string
	id := fmt.Sprintf("%s-%d", host, os.Getpid())
	ttl, poll := etcdlayout.DefaultTTL, 200*time.Millisecond
	level := slog.LevelInfo
	fs.StringVar(&spec, "layout", "", "the layout: etcd://HOST:PORT[,HOST:PORT...]/PREFIX (elected coordinator, statuses from etcd), or a layout `file` (one host; then -ingest and -fronts name the processes to ask)")
	fs.StringVar(&join, "join", "", "add the query node `NAME=URL`")
	fs.StringVar(&leave, "leave", "", "remove the query node `NAME`")
	fs.StringVar(&seed, "seed", "", "layout `file` to publish first when the etcd layout holds none (a new layer); without -join or -leave the command then exits")
	fs.StringVar(&id, "id", id, "this coordinator's `name` in the election")
	fs.DurationVar(&ttl, "ttl", ttl, "the term's lease `TTL` (whole seconds): how soon a standby takes over from a coordinator that died")
	fs.DurationVar(&poll, "poll", poll, "the longest `interval` between observations")
	fs.StringVar(&tokenFile, "token-file", "", "`file` whose first line is the query nodes' bearer token (else $"+querycmd.EnvToken+")")
	fs.StringVar(&ingest, "ingest", "", "with a layout file: comma-separated `NAME=URL` of the ingest nodes' status")
	fs.StringVar(&fronts, "fronts", "", "with a layout file: comma-separated `URLs` of the front ends' status")
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	goal, err := parseGoal(join, leave)
	if err != nil {
		return err
	}
	if spec == "" {
		return errors.New("-layout is required (see -h)")
	}
	token := strings.TrimSpace(os.Getenv(querycmd.EnvToken))
	if tokenFile != "" {
		if token, _, err = cli.ReadTokenFile(tokenFile); err != nil {
			return fmt.Errorf("-token-file: %w", err)
		}
	}
	log := cli.NewLogger(stderr, level)
	cc := keyspace.CoordinatorConfig{Token: token, Poll: poll, Logger: log}
	if !etcdlayout.IsURL(spec) {
		if seed != "" {
			return errors.New("-seed is for an etcd layout: a layout file is its own seed")
		}
		cc.LayoutPath = spec
		if cc.Ingest, err = parsePairs("-ingest", ingest); err != nil {
			return err
		}
		for u := range strings.SplitSeq(fronts, ",") {
			if u = strings.TrimSpace(u); u != "" {
				cc.Fronts = append(cc.Fronts, u)
			}
		}
		co, err := keyspace.NewCoordinator(cc)
		if err != nil {
			return err
		}
		log.Info("coordinating", "layout", spec, "goal", goal.String())
		return done(ctx, co.Drive(ctx, goal))
	}
	if ingest != "" || fronts != "" {
		return errors.New("-ingest and -fronts are for a layout file: on etcd every process reports itself")
	}
	st, closer, err := etcdlayout.Dial(spec)
	if err != nil {
		return fmt.Errorf("-layout: %w", err)
	}
	defer closer.Close()
	if seed != "" {
		if err := seedLayout(ctx, st, seed, log); err != nil {
			return err
		}
		if goal == (keyspace.Goal{}) {
			return nil // -seed alone: a new layer's first layout, no change to drive
		}
	}
	log.Info("campaigning", "layout", spec, "id", id, "goal", goal.String())
	err = st.Coordinate(ctx, etcdlayout.CoordinateConfig{
		ID: id, TTL: ttl, Coordinator: cc,
		OnElected: func() { log.Info("elected coordinator", "id", id) },
	}, goal)
	return done(ctx, err)
}

// done maps the end of a drive to the command's result: a stop by signal
// is not a failure.
func done(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

func parseGoal(join, leave string) (keyspace.Goal, error) {
	switch {
	case join != "" && leave != "":
		return keyspace.Goal{}, errors.New("give -join or -leave, not both")
	case join != "":
		name, u, ok := strings.Cut(join, "=")
		if !ok || name == "" || !strings.HasPrefix(u, "http") {
			return keyspace.Goal{}, fmt.Errorf("-join %q: want NAME=URL, the URL http://HOST:PORT", join)
		}
		return keyspace.Goal{Join: &keyspace.Node{Name: name, URL: u}}, nil
	case leave != "":
		return keyspace.Goal{Leave: leave}, nil
	}
	return keyspace.Goal{}, nil
}

func parsePairs(flagName, s string) (map[string]string, error) {
	out := map[string]string{}
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s %q: want NAME=URL", flagName, p)
		}
		out[k] = v
	}
	return out, nil
}

// seedLayout publishes the layout in file to st when st holds none.
func seedLayout(ctx context.Context, st *etcdlayout.Store, file string, log *slog.Logger) error {
	if l, _, err := st.Load(ctx); err == nil {
		log.Info("layout already published; -seed ignored", "epoch", l.Epoch)
		return nil
	} else if !errors.Is(err, etcdlayout.ErrNoLayout) {
		return err
	}
	l, err := keyspace.Load(file)
	if err != nil {
		return fmt.Errorf("-seed: %w", err)
	}
	if _, err := st.Publish(ctx, 0, l); err != nil && !errors.Is(err, keyspace.ErrConflict) {
		return fmt.Errorf("-seed: %w", err)
	}
	log.Info("seeded the layout", "epoch", l.Epoch, "file", file)
	return nil
}
