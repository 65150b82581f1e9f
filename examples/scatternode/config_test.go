package scatternode_test

import (
	"encoding/json"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Validate names the field at fault, and New refuses what Validate
// refuses.
func TestConfigValidate(t *testing.T) {
	base := scatternode.DefaultConfig()
	base.Backends = []string{"http://a"}
	if err := base.Validate(); err != nil {
		t.Fatalf("DefaultConfig with a backend: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name string
		mod  func(c *scatternode.Config)
		want string
	}{
		{"no backends", func(c *scatternode.Config) { c.Backends = nil }, "Backends: none given"},
		{"timeout", func(c *scatternode.Config) { c.Timeout = 0 }, "Timeout 0s must be positive"},
		{"negative cache", func(c *scatternode.Config) { c.CacheEntries = -1 }, "CacheEntries -1"},
		{"cache ttl", func(c *scatternode.Config) { c.CacheEntries, c.CacheTTL = 10, 0 }, "CacheTTL 0s must be positive"},
		{"negative ttl", func(c *scatternode.Config) { c.CacheNegativeTTL = -time.Second }, "CacheNegativeTTL -1s"},
		{"shutdown", func(c *scatternode.Config) { c.ShutdownTimeout = 0 }, "ShutdownTimeout 0s"},
		{"hedge", func(c *scatternode.Config) { c.Hedge = -time.Millisecond }, "Hedge -1ms"},
		{"assigner", func(c *scatternode.Config) { c.AssignerURL = "ftp://a" }, `AssignerURL "ftp://a": scheme must be http or https`},
		{"scheme", func(c *scatternode.Config) { c.Backends = []string{"ftp://a"} }, `backend "ftp://a": scheme must be http or https`},
		{"no scheme", func(c *scatternode.Config) { c.Backends = []string{"127.0.0.1:1"} }, `backend "127.0.0.1:1": want an http or https URL`},
		{"no host", func(c *scatternode.Config) { c.Backends = []string{"http:///x"} }, "no host"},
		{"unparsable", func(c *scatternode.Config) { c.Backends = []string{"http://a b:1"} }, `backend "http://a b:1"`},
		{"query", func(c *scatternode.Config) { c.Backends = []string{"http://a/?x=1"} }, "no query"},
		{"credentials", func(c *scatternode.Config) { c.Backends = []string{"http://u:p@a"} }, "credentials"},
		{"twice", func(c *scatternode.Config) { c.Backends = []string{"http://a", "HTTP://A/"} }, `"HTTP://A/" is listed twice (also as "http://a")`},
		{"replication", func(c *scatternode.Config) { c.Ring = &scatternode.Ring{Replication: 2} }, "Ring.Replication 2 must be between 1 and the number of backends, 1"},
		{"vnodes", func(c *scatternode.Config) { c.Ring = &scatternode.Ring{Vnodes: -1, Replication: 1} }, "Ring.Vnodes -1"},
	} {
		c := base
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
		if _, err := scatternode.New(t.Context(), c, scatternode.Listeners{Find: ln}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// New normalises the backends (scheme and host in lower case, no
// trailing slash, a path kept as a prefix) and fills in the ring's
// default; Config returns them so.
func TestConfigNormalized(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := scatternode.DefaultConfig()
	cfg.Backends = []string{"http://a:1", "HTTP://B:2/", "https://c/prefix/", "http://d"}
	cfg.Ring = &scatternode.Ring{Replication: 2}
	s, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.Config()
	if want := []string{"http://a:1", "http://b:2", "https://c/prefix", "http://d"}; !slices.Equal(got.Backends, want) {
		t.Errorf("Backends %q, want %q", got.Backends, want)
	}
	if want := (scatternode.Ring{Vnodes: scatter.DefaultVnodes, Replication: 2}); got.Ring == nil || *got.Ring != want {
		t.Errorf("Ring %+v, want %+v", got.Ring, want)
	}
	if cfg.Ring.Vnodes != 0 || cfg.Backends[1] != "HTTP://B:2/" {
		t.Errorf("New changed the caller's Config: %+v", cfg)
	}
}

// A Config, a Layout's included, round-trips through encoding/json; the
// logger and hooks are left out.
func TestConfigJSON(t *testing.T) {
	c := scatternode.DefaultConfig()
	c.Backends = []string{"http://a:1", "http://b:2"}
	c.Ring = &scatternode.Ring{Vnodes: 16, Replication: 2}
	c.Hedge, c.CacheEntries, c.AssignerURL = 3*time.Millisecond, 100, "http://assigner:3004"
	c.Logger = slog.New(slog.DiscardHandler)
	c.Hooks.Serving = func(*scatter.Gather) {}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back scatternode.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	c.Logger, c.Hooks = nil, scatternode.Hooks{}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip:\n got %+v\nwant %+v\njson %s", back, c, b)
	}
	if strings.Contains(string(b), "Logger") || strings.Contains(string(b), "Hooks") {
		t.Errorf("the JSON holds the logger or hooks: %s", b)
	}

	l := keyspace.Layout{Epoch: 3, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://q1:3100"}}, Current: []string{"q1"}}
	c = scatternode.DefaultConfig()
	c.Layout = &l
	b, err = json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back = scatternode.Config{}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) || back.Validate() != nil {
		t.Errorf("round trip with a layout:\n got %+v (%v)\nwant %+v\njson %s", back, back.Validate(), c, b)
	}
}
