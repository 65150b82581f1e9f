package indexernode

import (
	"context"
	"fmt"
	"github.com/indexkit/indexkit/internal/errkind"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/internal/httpserve"
)

// ErrRunTwice is returned by [Node.Run] called a second time or after
// [Node.Close].
var ErrRunTwice = errkind.New(errkind.RunTwice, "indexernode: Run called twice or after Close")

// Run runs the node until ctx ends: it asks every publisher it follows for
// its head, serves its listeners, ingests, takes announces, watches the
// disk and freezes, polls and logs progress. When ctx ends it stops the
// listeners (waiting at most Config.ShutdownTimeout for requests in
// flight) and waits for ingestion to persist where it is; it returns only
// after every goroutine it started has exited, nil after a clean stop.
// Call [Node.Close] after it.
func (n *Node) Run(ctx context.Context) error {
	if n.running.Swap(true) {
		return ErrRunTwice
	}
	n.log.Info("starting", "id", n.id.String(), "dir", n.cfg.Dir, "store", n.storeName(), "frozen", n.frozen(),
		"assigner_mode", n.cfg.UseAssigner, "p2p", n.host != nil, "dial_policy", n.policy.String())
	eg, gctx := errgroup.WithContext(ctx)
	for _, s := range n.srv {
		httpserve.Serve(gctx, eg, s.name, s.srv, s.ln, n.cfg.ShutdownTimeout)
	}
	if err := n.resync(gctx); err != nil && gctx.Err() == nil {
		n.log.Error("start: resync", "err", err)
		// Stop what was started: the servers end with the group's context.
		eg.Go(func() error { return err })
		return eg.Wait()
	}
	eg.Go(func() error { return n.ing.Run(gctx) })
	eg.Go(func() error { return n.fr.Run(gctx) })
	eg.Go(func() error { return n.logProgress(gctx, n.cfg.Progress) })
	if n.cfg.Poll > 0 {
		eg.Go(func() error { return n.poll(gctx, n.cfg.Poll) })
	}
	if n.gossip != nil {
		eg.Go(func() error { return n.gossip.Run(gctx) })
	}
	if n.shard != nil {
		eg.Go(func() error { return n.runShard(gctx) })
	}
	return httpserve.WaitStopped(gctx, eg, n.log)
}

func (n *Node) storeName() string {
	if n.ownS {
		return n.cfg.Store
	}
	return fmt.Sprintf("%T", n.st)
}

// poll runs resync every interval until ctx is done. A failed resync is
// logged and tried again at the next tick.
func (n *Node) poll(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := n.resync(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("poll: resync failed", "err", err)
			}
		}
	}
}

// resync queues a walk of every publisher the node follows
// ([handoff.Node.Following]), each asked for its head at the addresses
// the ingester persisted: announces sent while the node was down are
// lost, and a publisher that has stopped announcing would otherwise stay
// behind until its next announce. A publisher whose head has not moved
// costs one head request.
func (n *Node) resync(ctx context.Context) error {
	pubs, err := n.adm.Following(ctx)
	if err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	for _, pub := range pubs {
		if err := n.ing.Announce(pub, nil, cid.Undef); err != nil {
			n.log.Warn("resync: cannot queue a walk", "publisher", pub.String(), "err", err)
		}
	}
	if len(pubs) > 0 {
		n.log.Info("resync: asking every publisher followed for its head", "publishers", len(pubs))
	}
	return nil
}

// logProgress logs, every interval, the progress of each publisher whose
// figures changed.
func (n *Node) logProgress(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := make(map[peer.ID]ingest.Status)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, s := range n.ing.Statuses() {
			if !s.Verified {
				// Anyone can announce publishers that never verify: their
				// failures are counted in metrics, not logged one by one.
				delete(last, s.Publisher)
				continue
			}
			p := last[s.Publisher]
			if p.AdsWalked == s.AdsWalked && p.AdsApplied == s.AdsApplied && p.EntriesIndexed == s.EntriesIndexed && p.Failures == s.Failures {
				continue
			}
			last[s.Publisher] = s
			attrs := []any{"publisher", s.Publisher.String(), "ads_walked", s.AdsWalked, "ads_applied", s.AdsApplied,
				"multihashes_indexed", s.EntriesIndexed, "pending", s.Pending, "walking", s.Walking, "frozen", n.ingestFrozen()}
			if s.LastHead.Defined() {
				attrs = append(attrs, "cid", s.LastHead.String())
			}
			if s.LastError != nil {
				attrs = append(attrs, "failures", s.Failures, "last_error", s.LastError.Error())
			}
			n.log.Info("progress", attrs...)
		}
	}
}
