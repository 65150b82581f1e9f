package scatternode_test

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// A Config with a Layout takes its backends from the layout's read nodes:
// a Ring beside it, other Backends or an invalid layout are refused with
// the field named; Config returns the read nodes' URLs, and giving them
// back is accepted.
func TestConfigLayout(t *testing.T) {
	l := keyspace.Layout{Epoch: 7, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes:   []keyspace.Node{{Name: "a", URL: "http://127.0.0.1:1/"}, {Name: "b", URL: "HTTP://127.0.0.1:2"}},
		Current: []string{"a", "b"}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for name, tc := range map[string]struct {
		mod  func(c *scatternode.Config)
		want string
	}{
		"ring":     {func(c *scatternode.Config) { c.Ring = &scatternode.Ring{Replication: 1} }, "Ring must be nil with a Layout"},
		"backends": {func(c *scatternode.Config) { c.Backends = []string{"http://127.0.0.1:3"} }, "leave Backends empty"},
		"invalid":  {func(c *scatternode.Config) { c.Layout.Replication = 3 }, "Layout: shard: invalid layout"},
	} {
		cfg := scatternode.DefaultConfig()
		bad := l.Clone()
		cfg.Layout = &bad
		tc.mod(&cfg)
		if _, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{Find: ln}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	cfg := scatternode.DefaultConfig()
	cfg.Layout = &l
	s, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.Config()
	if want := []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}; !slices.Equal(got.Backends, want) || got.Layout.Epoch != 7 {
		t.Errorf("Config: backends %q epoch %d, want %q and 7", got.Backends, got.Layout.Epoch, want)
	}
	if applied, err := s.Reload(got); err != nil || applied {
		t.Errorf("Reload of Config(): applied %v, %v; want unchanged", applied, err)
	}
}
