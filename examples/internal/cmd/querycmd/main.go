package querycmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// EnvToken is the environment variable holding the shard API's bearer
// token when no -token-file is given.
const EnvToken = "INDEXKIT_SHARD_TOKEN"

// Main is the query program (examples/query): it parses args as that
// command's flags onto a querynode.Config, binds the listeners, opens the
// node and runs it until ctx ends, re-reading the layout (file or etcd) on each
// SIGHUP. It logs one msg=listening name=query addr=<host:port> line (and
// name=pprof with -pprof) before msg=starting. It returns nil after a
// clean shutdown and flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	cfg := querynode.DefaultConfig()
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: query [flags]")
		fmt.Fprintln(fs.Output(), "Runs a query node of a keyspace-sharded IPNI layer: the index of its ranges, written by ingest nodes, answered by the find API.")
		fs.PrintDefaults()
	}
	listen := "127.0.0.1:3100"
	var tokenFile, shardHosts, pprofAddr string
	level := slog.LevelInfo
	maxConns, maxPerIP := cli.DefaultMaxConns, cli.DefaultMaxConnsPerIP
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "data `directory` (index, positions, copy guard)")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "the node's `name` in the layout (required)")
	fs.StringVar(&cfg.Layout, "layout", cfg.Layout, "layout `file`, re-read on SIGHUP; or etcd://HOST:PORT[,HOST:PORT...]/PREFIX, an etcd layout the node follows by a watch while keeping its status under a lease there")
	fs.DurationVar(&cfg.LayoutPoll, "layout-poll", cfg.LayoutPoll, "how often to read the layout file for a new layout (0: only on SIGHUP; an etcd layout needs none)")
	fs.DurationVar(&cfg.PresenceTTL, "presence-ttl", cfg.PresenceTTL, "with an etcd -layout, the lease `TTL` of the node's status key, whole seconds (0: "+etcdlayout.DefaultTTL.String()+")")
	fs.StringVar(&cfg.Store, "store", cfg.Store, "index `backend`: pebble or memory")
	fs.StringVar(&listen, "listen", listen, "listen `address` of the find and shard APIs")
	fs.StringVar(&pprofAddr, "pprof", "", "loopback listen `address` of Go's /debug/pprof/ profiles, answering no web page or rebound name (\"\": none, the default)")
	fs.StringVar(&tokenFile, "token-file", "", "`file` whose first line is the shard API's bearer token (else $"+EnvToken+"; neither: no token, loopback only)")
	fs.StringVar(&shardHosts, "shard-hosts", "", "comma-separated host `names` under which the shard API without a token takes writes, besides 127.0.0.0/8, [::1] and localhost (other Hosts get 421)")
	fs.Int64Var(&cfg.IndexCacheSize, "index-cache-size", cfg.IndexCacheSize, "`bytes` of the Pebble block cache")
	fs.DurationVar(&cfg.CommitInterval, "commit-interval", cfg.CommitInterval, "how long applied batches may wait to be made durable together (0: each batch before it is answered; writers keep a batch until it is durable)")
	fs.BoolVar(&cfg.CopyKeyByKey, "copy-key-by-key", cfg.CopyKeyByKey, "copy the keys the node gains Put by Put, not as sorted tables (a baseline)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long requests in flight may take on SIGTERM")
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	cli.ConnLimitFlags(fs, &maxConns, &maxPerIP)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if tokenFile != "" {
		tok, _, err := cli.ReadTokenFile(tokenFile)
		if err != nil {
			return fmt.Errorf("-token-file: %w", err)
		}
		cfg.Token = tok
	} else {
		cfg.Token = strings.TrimSpace(os.Getenv(EnvToken))
	}
	for h := range strings.SplitSeq(shardHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.ShardHosts = append(cfg.ShardHosts, h)
		}
	}
	if cfg.Token == "" && !cli.IsLoopback(listen) {
		return fmt.Errorf("-listen %s: the shard API off loopback needs a token (-token-file or $%s): anyone who reaches it could write the index", listen, EnvToken)
	}
	log := cli.NewLogger(stderr, level)
	cfg.Logger = log

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	if err := cfg.Validate(); err != nil {
		return err
	}
	ln, err := cli.Listen(listen, maxConns, maxPerIP)
	if err != nil {
		return fmt.Errorf("-listen %s: %w", listen, err)
	}
	var pln net.Listener
	if pprofAddr != "" {
		if pln, err = cli.ListenPprof(pprofAddr); err != nil {
			ln.Close()
			return err
		}
	}
	n, err := querynode.New(cfg, ln) // closes ln on error
	if err != nil {
		if pln != nil {
			pln.Close()
		}
		return err
	}
	defer func() {
		if err := n.Close(); err != nil {
			log.Error("close", "err", err)
		}
	}()
	cli.LogListening(log, "query", ln.Addr().String())
	eg, gctx := errgroup.WithContext(ctx)
	if pln != nil {
		cli.LogListening(log, "pprof", pln.Addr().String())
		if err := cli.ServePprof(gctx, eg, pln, cfg.ShutdownTimeout); err != nil {
			pln.Close()
			return err
		}
	}
	eg.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-hup:
				if err := n.ReloadLayout(); err != nil {
					log.Error("SIGHUP: layout not loaded; keeping the one in force", "err", err)
				}
			}
		}
	})
	eg.Go(func() error { return n.Run(gctx) })
	return eg.Wait()
}
