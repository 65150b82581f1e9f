package indexernode

import (
	"context"
	"io"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/cli"
)

// Run is the indexer program: it parses args as examples/indexer's flags
// (see that command's documentation), opens the node on its data
// directory and serves until ctx is done (SIGINT or SIGTERM in the binary,
// the caller's cancel in process), then stops the listeners, waits for
// ingestion to persist where it is, and closes the stores. It logs to
// stderr, including one msg=listening name=<x> addr=<host:port> line per
// listener. It returns nil after a clean shutdown and flag.ErrHelp for -h.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := loadConfig(args, stderr)
	if err != nil {
		return err
	}
	tok, err := cfg.adminToken(os.Getenv)
	if err != nil {
		return err
	}
	cfg.AdminToken, cfg.AdminTokenFile = tok.Value, ""
	log := cli.NewLogger(stderr, cfg.level())
	logSecurity(log, cfg, tok)
	met := newMetrics()
	n, err := openNode(ctx, cfg, log, met)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil {
			log.Error("close", "err", cerr)
		}
	}()
	srv, err := n.listen()
	if err != nil {
		return err
	}
	log.Info("starting", "id", n.id.String(), "dir", cfg.Dir, "store", cfg.Store, "frozen", n.frozen(),
		"assigner_mode", cfg.UseAssigner, "p2p", cfg.P2P != "", "dial_policy", n.policy.String())

	if err := n.resync(ctx); err != nil {
		if ctx.Err() != nil { // stopped while starting: a clean stop
			log.Info("stopped")
			return nil
		}
		return err
	}
	eg, ctx := errgroup.WithContext(ctx)
	srv.start(ctx, eg)
	eg.Go(func() error { return n.ing.Run(ctx) })
	eg.Go(func() error { return n.feedAnnounces(ctx) })
	eg.Go(func() error { return n.fr.Run(ctx) })
	eg.Go(func() error { return n.logProgress(ctx, cfg.Progress.d()) })
	if cfg.Poll > 0 {
		eg.Go(func() error { return n.poll(ctx, cfg.Poll.d()) })
	}
	if n.gossip != nil {
		eg.Go(func() error { return n.gossip.Run(ctx) })
	}
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx).Error())
	if err := eg.Wait(); err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}
