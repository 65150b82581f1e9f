package piecenode_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/ipfs/go-datastore"

	"github.com/indexkit/indexkit/examples/piecenode"
	"github.com/indexkit/indexkit/piece/memory"
)

// New refuses a missing listener and the Config combinations that would
// lose or skip pieces, naming the field; Close before Run closes the
// listener and makes Run fail; Close is idempotent.
func TestLifecycle(t *testing.T) {
	cfg := piecenode.DefaultConfig()
	cfg.ProvidersURL = ""
	if _, err := piecenode.New(t.Context(), cfg, piecenode.Listeners{}); err == nil || !strings.Contains(err.Error(), "Listeners.API") {
		t.Errorf("New without a listener: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	st, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		name string
		edit func(*piecenode.Config)
		want string
	}{
		{"capacity with a store", func(c *piecenode.Config) { c.Store = st }, "Capacity"},
		{"walk state without a store", func(c *piecenode.Config) { c.WalkState = datastore.NewMapDatastore() }, "WalkState"},
		{"no capacity", func(c *piecenode.Config) { c.Capacity = 0 }, "Capacity 0"},
		{"no shutdown timeout", func(c *piecenode.Config) { c.ShutdownTimeout = 0 }, "ShutdownTimeout"},
		{"negative entry chunks", func(c *piecenode.Config) { c.EntryChunks = -1 }, "EntryChunks"},
	} {
		bad := cfg
		tc.edit(&bad)
		if _, err := piecenode.New(t.Context(), bad, piecenode.Listeners{API: ln}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	s, err := piecenode.New(t.Context(), cfg, piecenode.Listeners{API: ln})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Addrs().API, ln.Addr().String(); got != want {
		t.Errorf("Addrs().API = %s, want %s", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after Close")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Run(ctx); !errors.Is(err, piecenode.ErrRunTwice) {
		t.Errorf("Run after Close: %v, want ErrRunTwice", err)
	}
}
