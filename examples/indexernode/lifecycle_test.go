package indexernode_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func accepts(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// New names the field of a bad Config and closes the listeners it was
// given when it fails; Close before Run closes the listeners and makes
// Run fail; Close is idempotent; a caller's Index is not closed.
func TestLifecycle(t *testing.T) {
	base := indexernode.DefaultConfig()
	base.Dir, base.Store, base.P2P = t.TempDir(), "memory", ""

	index := memory.New()
	defer index.Close()
	for _, c := range []struct {
		edit func(*indexernode.Config)
		want string
	}{
		{func(c *indexernode.Config) { c.Dir = "" }, "Config.Dir"},
		{func(c *indexernode.Config) { c.Store = "badger" }, "Config.Store"},
		{func(c *indexernode.Config) { c.Index = index }, "leave Store empty"},
		{func(c *indexernode.Config) { c.Progress = 0 }, "Config.Progress"},
		{func(c *indexernode.Config) { c.Topic = "/other" }, "Config.Topic"},
		{func(c *indexernode.Config) { c.HandoffFrom, c.HandoffFromFile = []string{"http://a"}, "f" }, "HandoffFromFile"},
	} {
		cfg := base
		c.edit(&cfg)
		ln := listen(t)
		_, err := indexernode.New(t.Context(), cfg, indexernode.Listeners{Find: ln})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want an error naming %q", err, c.want)
		}
		if accepts(ln.Addr().String()) {
			t.Errorf("a failed New (%s) left its listener open", c.want)
		}
	}

	cfg := base
	cfg.Store, cfg.Index = "", index
	find, admin := listen(t), listen(t)
	n, err := indexernode.New(t.Context(), cfg, indexernode.Listeners{Find: find, Admin: admin})
	if err != nil {
		t.Fatal(err)
	}
	a := n.Addrs()
	if a.Find != find.Addr().String() || a.Admin != admin.Addr().String() || a.Ingest != "" || a.IngestURL() != "" || len(a.P2P) != 0 {
		t.Errorf("Addrs = %+v", a)
	}
	if a.ID != n.ID() || a.ID == "" {
		t.Errorf("Addrs().ID = %q, ID() = %q", a.ID, n.ID())
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if accepts(a.Find) || accepts(a.Admin) {
		t.Error("a listener still accepts after Close")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := n.Run(ctx); !errors.Is(err, indexernode.ErrRunTwice) {
		t.Errorf("Run after Close: %v, want ErrRunTwice", err)
	}
	// The caller's index is still open.
	if _, err := index.Get(t.Context(), []byte{0x12, 0}); errors.Is(err, store.ErrClosed) {
		t.Errorf("the node closed the caller's Index: %v", err)
	}
}
