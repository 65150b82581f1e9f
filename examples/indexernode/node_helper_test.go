package indexernode_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/internal/netlimit"
)

// running is a node a test runs in this process.
type running struct {
	find, ingest, admin string // http://127.0.0.1:port
	tap                 *logtap.Tap
	node                *indexernode.Node
	stop                func()
}

// runNode runs a node of cfg with every listener on 127.0.0.1:0, capped
// as examples/indexer caps them (netlimit's defaults), logging at debug
// level into a tap (and into the file $DEBUGLOG when set). It returns
// once Run has logged msg=starting; stop (also run at the end of the
// test) ends Run and closes the node.
func runNode(ctx context.Context, t testing.TB, cfg indexernode.Config) running {
	t.Helper()
	var w io.Writer = io.Discard
	if f := os.Getenv("DEBUGLOG"); f != "" {
		w, _ = os.Create(f)
	}
	tap := logtap.New(w)
	cfg.Logger = slog.New(slog.NewTextHandler(tap, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var lns indexernode.Listeners
	for _, dst := range []*net.Listener{&lns.Find, &lns.Ingest, &lns.Admin} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if *dst, err = netlimit.NewListener(ln); err != nil {
			t.Fatal(err)
		}
	}
	n, err := indexernode.New(ctx, cfg, lns)
	if err != nil {
		t.Fatalf("indexernode.New: %v", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("indexer: %v", err)
		}
		if err := n.Close(); err != nil {
			t.Errorf("indexer: close: %v", err)
		}
		tap.Close()
	}
	t.Cleanup(stop)
	if _, err := tap.WaitMsg(ctx, "starting"); err != nil {
		stop()
		t.Fatalf("indexer did not start: %v", err)
	}
	a := n.Addrs()
	return running{find: a.FindURL(), ingest: a.IngestURL(), admin: a.AdminURL(), tap: tap, node: n, stop: stop}
}

// testConfig is DefaultConfig on dir with the given store, without
// libp2p, edited by edits.
func testConfig(dir, store string, edits ...func(*indexernode.Config)) indexernode.Config {
	cfg := indexernode.DefaultConfig()
	cfg.Dir, cfg.Store, cfg.P2P = dir, store, ""
	for _, e := range edits {
		e(&cfg)
	}
	return cfg
}

// runIndexer runs a node with a memory store on a fresh directory.
func runIndexer(t *testing.T, edits ...func(*indexernode.Config)) running {
	t.Helper()
	return runNode(t.Context(), t, testConfig(t.TempDir(), "memory", edits...))
}

type indexerURLs struct{ find, ingest, admin string }

// startIndexer runs a node with a Pebble store on dir that dials
// loopback (the tests' publishers are there), and returns its URLs and a
// function that stops it.
func startIndexer(ctx context.Context, t *testing.T, dir string, edits ...func(*indexernode.Config)) (indexerURLs, func()) {
	t.Helper()
	cfg := testConfig(dir, "pebble", func(c *indexernode.Config) { c.AllowPrivateAddrs = true })
	for _, e := range edits {
		e(&cfg)
	}
	r := runNode(ctx, t, cfg)
	return indexerURLs{find: r.find, ingest: r.ingest, admin: r.admin}, r.stop
}

// Edits of a test node's Config.

func useAssigner(c *indexernode.Config)  { c.UseAssigner = true }
func allowPrivate(c *indexernode.Config) { c.AllowPrivateAddrs = true }
func memoryStore(c *indexernode.Config)  { c.Store = "memory" }

func newID(t *testing.T) peer.ID {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
