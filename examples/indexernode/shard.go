package indexernode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/scatter/keyspace"
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
	// [Node.ReloadLayout] (examples/indexer: on SIGHUP).
	Layout string `json:"Layout"`
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
}

func (n *Node) openShard(cfg Config) error {
	sc := cfg.Shard
	l, err := keyspace.Load(sc.Layout)
	if err != nil {
		return fmt.Errorf("Shard.Layout: %w", err)
	}
	sp := &shardPart{}
	n.shard = sp
	if sp.records, err = openStore(cfg.Store, filepath.Join(cfg.Dir, indexDir), cfg, n.log); err != nil {
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

// ReloadLayout re-reads the layout file of a sharded node and routes by
// it from now on. A layout that does not load, or is older than the one in
// force, is refused and the node keeps its layout
// ([writer.Writer.ReloadFile]). Without Config.Shard it does nothing.
func (n *Node) ReloadLayout() error {
	if n.shard == nil {
		return nil
	}
	if err := n.shard.w.ReloadFile(n.cfg.Shard.Layout); err != nil {
		return err
	}
	l := n.shard.w.Layout()
	n.log.Info("layout loaded", "epoch", l.Epoch, "phase", l.Phase)
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

func (n *Node) runShard(ctx context.Context) error {
	return n.shard.w.Run(ctx)
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
	return errors.Join(errs...)
}
