package indexernode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/internal/layoutsrc"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	"github.com/indexkit/indexkit/scatter/keyspace/writer"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/store"
)

// ShardConfig makes a node an ingest node of the keyspace-sharded layer
// (package scatter/keyspace): it keeps doing everything it does with
// publishers, but indexes into the query nodes of a layout instead of its
// own store, through a durable outbox under Dir/outbox
// ([writer.Open]). Its own store (Config.Store under Dir) then holds only
// provider records; its find API has no index to answer from.
type ShardConfig struct {
	// Layout is the layout file ([keyspace.Load]), re-read by
	// [Node.ReloadLayout] (examples/indexer: on SIGHUP); or an etcd
	// layout, etcd://HOST:PORT[,HOST:PORT...]/PREFIX (package
	// scatter/keyspace/etcdlayout), which Run follows by the store's
	// watch while it keeps the node's status (Role ingest, Name, the
	// writer's Status) under a lease.
	Layout string `json:"Layout"`
	// PresenceTTL is the lease TTL of the node's status key with an etcd
	// layout (0: 5 s, etcdlayout.DefaultTTL; whole seconds).
	PresenceTTL time.Duration `json:"PresenceTTL,omitempty"`
	// Name is the node's name among the layout's Writers. Required.
	Name string `json:"Name"`
	// Token is the query nodes' bearer token.
	Token string `json:"Token"`
	// BatchBytes is the size of the batches sent to each query node
	// (0: the writer package's 1 MiB).
	BatchBytes int `json:"BatchBytes"`
}

// shardPart is what a sharded node adds: the writer (which owns its
// outbox) over its records store.
type shardPart struct {
	w       *writer.Writer
	records store.Store
	src     *layoutsrc.Source
}

func (n *Node) openShard(cfg Config) error {
	sc := cfg.Shard
	src, err := layoutsrc.Open(sc.Layout)
	if err != nil {
		return fmt.Errorf("Shard.Layout: %w", err)
	}
	sp := &shardPart{src: src}
	n.shard = sp
	ctx, cancel := context.WithTimeout(context.Background(), LoadTimeout)
	l, err := src.Load(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("Shard.Layout %s: %w", sc.Layout, err)
	}
	if sp.records, err = openStore(cfg.Store, filepath.Join(cfg.Dir, indexDir), cfg, n.pace, n.log); err != nil {
		return lockHint(err)
	}
	// On a disk budget the outbox is sized to it: small segments, so
	// that delivered batches leave the disk soon, and batches no larger
	// than a segment.
	batch, seg := sc.BatchBytes, int64(0)
	if cfg.DiskBudget > 0 {
		seg = min(freeze.SplitBudget(cfg.DiskBudget, 0).Outbox, outbox.DefaultSegmentSize)
		if batch == 0 || int64(batch) > seg {
			batch = int(seg)
		}
	}
	sp.w, err = writer.Open(cfg.Dir, writer.Config{
		Name: sc.Name, Records: sp.records, Token: sc.Token,
		BatchBytes: batch, SegmentSize: seg, Logger: n.log.With("part", "writer"),
	}, l)
	if err != nil {
		return fmt.Errorf("Shard: %w", err)
	}
	n.st = sp.w
	return nil
}

// LoadTimeout bounds the reads of an etcd layout that New and
// ReloadLayout make (they take no context).
const LoadTimeout = 10 * time.Second

// ReloadLayout re-reads the layout (the file, or the etcd store) of a
// sharded node and routes by it from now on. A layout that does not load,
// or is older than the one in force, is refused and the node keeps its
// layout ([writer.Writer.SetLayout]). Without Config.Shard it does
// nothing.
func (n *Node) ReloadLayout() error {
	if n.shard == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), LoadTimeout)
	defer cancel()
	l, err := n.shard.src.Load(ctx)
	if err != nil {
		return err
	}
	if err := n.shard.w.SetLayout(l); err != nil {
		return err
	}
	n.log.Info("layout loaded", "epoch", l.Epoch, "phase", l.Phase)
	return nil
}

// followLayout takes l, a layout the etcd store's watch hands the node,
// and logs it when it moves the node to a new epoch.
func (n *Node) followLayout(l keyspace.Layout) error {
	before := n.shard.w.Layout().Epoch
	if err := n.shard.w.SetLayout(l); err != nil {
		return err
	}
	if l.Epoch != before {
		n.log.Info("layout loaded", "epoch", l.Epoch, "phase", l.Phase)
	}
	return nil
}

// ShardStatus reports a sharded node's epoch and outboxes (zero without
// Config.Shard).
func (n *Node) ShardStatus() keyspace.Status {
	if n.shard == nil {
		return keyspace.Status{}
	}
	return n.shard.w.Status()
}

func (n *Node) shardHandler() http.Handler {
	if n.shard == nil {
		return nil
	}
	return n.shard.w.Handler()
}

// noIndex wraps h, a lookup handler of a sharded node's find listener:
// the requests that need the index ([needsIndex]) are answered 421 (see
// [writer.Writer.NoIndex]); the others, and every CORS preflight, go to h.
func (sp *shardPart) noIndex(h http.Handler) http.Handler {
	return sp.w.NoIndex(h, needsIndex)
}

// needsIndex reports whether a request for path on the find listener is
// a lookup answered from the index.
func needsIndex(path string) bool {
	return path == "/multihash" || strings.HasPrefix(path, "/multihash/") || strings.HasPrefix(path, "/cid/") ||
		strings.HasPrefix(path, routing.Prefix+"providers/") || strings.HasPrefix(path, sample.Prefix)
}

// runShard runs the writer until ctx ends. With an etcd layout it first
// joins (the node's status under a lease, revoked when runShard returns)
// and follows the store's watch meanwhile.
func (n *Node) runShard(ctx context.Context) error {
	sp := n.shard
	if !sp.src.Etcd() {
		return sp.w.Run(ctx)
	}
	pres, err := sp.src.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleIngest, Name: n.cfg.Shard.Name,
		Status: sp.w.Status, TTL: n.cfg.Shard.PresenceTTL})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("Shard.Layout: %w", err)
	}
	defer func() {
		if err := pres.Close(); err != nil {
			n.log.Warn("presence not revoked; its key expires with its lease", "err", err)
		}
	}()
	eg, gctx := errgroup.WithContext(ctx)
	eg.Go(func() error { return sp.w.Run(gctx) })
	eg.Go(func() error {
		return sp.src.Follow(gctx, 0, nil, n.followLayout, func(err error) {
			n.log.Error("layout: not loaded; keeping the one in force", "layout", n.cfg.Shard.Layout, "err", err)
		})
	})
	return eg.Wait()
}

// close closes the writer, and with it its outbox, then the records
// store. Run has returned.
func (sp *shardPart) close() error {
	var errs []error
	if sp.w != nil {
		errs = append(errs, sp.w.Close())
	}
	if sp.records != nil {
		errs = append(errs, sp.records.Close())
	}
	if sp.src != nil {
		errs = append(errs, sp.src.Close())
	}
	return errors.Join(errs...)
}
