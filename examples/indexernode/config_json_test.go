package indexernode_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/store/memory"
)

// A Config goes through encoding/json unchanged, every field but those
// that cannot be data (the index, the logger, the hooks): the pool hands
// a child process its node's Config so.
func TestConfigJSON(t *testing.T) {
	c := indexernode.DefaultConfig()
	c.Dir, c.DiskBudget, c.FreezeAt, c.UseAssigner = "/data", 64<<20, 80, true
	c.AdminHosts, c.HandoffFrom = []string{"indexer-0.test"}, []string{"http://127.0.0.1:3000"}
	c.AnnounceRateExempt = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	c.Shard = &indexernode.ShardConfig{Layout: "layout.json", Name: "ingest-0", Token: "t", BatchBytes: 1 << 20}
	c.Poll, c.Progress = 90*time.Second, time.Second
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back indexernode.Config
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip:\n got %+v\nwant %+v\njson %s", back, c, data)
	}

	// What is not data stays out of the JSON.
	c.Index, c.Logger = memory.New(), slog.New(slog.DiscardHandler)
	c.Hooks.DiskCheck = func(float64, error) {}
	data, err = json.Marshal(c)
	if err != nil {
		t.Fatalf("Config with an index, a logger and hooks: %v", err)
	}
	for _, name := range []string{`"Index"`, `"Logger"`, `"Hooks"`} {
		if strings.Contains(string(data), name) {
			t.Errorf("JSON has %s: %s", name, data)
		}
	}
}

// Validate names the field of each bad value, and errors.Is finds
// ErrInvalidConfig.
func TestConfigValidate(t *testing.T) {
	if err := indexernode.DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for field, edit := range map[string]func(*indexernode.Config){
		"Dir":               func(c *indexernode.Config) { c.Dir = "" },
		"DiskBudget":        func(c *indexernode.Config) { c.DiskBudget = -1 },
		"FreezeAt":          func(c *indexernode.Config) { c.FreezeAt = 100.5 },
		"AnnounceRate":      func(c *indexernode.Config) { c.AnnounceRate = -1 },
		"GossipPeerRate":    func(c *indexernode.Config) { c.GossipPeerRate = -1 },
		"Shard.Layout":      func(c *indexernode.Config) { c.Shard = &indexernode.ShardConfig{Name: "a"} },
		"Shard.Name":        func(c *indexernode.Config) { c.Shard = &indexernode.ShardConfig{Layout: "l"} },
		"AdminHosts":        func(c *indexernode.Config) { c.AdminHosts = []string{"a b"} },
		"IndexMemTableSize": func(c *indexernode.Config) { c.IndexMemTableSize = 1 },
	} {
		c := indexernode.DefaultConfig()
		edit(&c)
		err := c.Validate()
		var ce *indexernode.ConfigError
		if !errors.Is(err, indexernode.ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != field ||
			!strings.HasPrefix(err.Error(), "indexernode: Config."+field+": ") {
			t.Errorf("%s: %v, want an error naming indexernode: Config.%s", field, err, field)
		}
	}
	// The bounds: 100% freezes at full disk, no budget is 0.
	c := indexernode.DefaultConfig()
	c.FreezeAt, c.DiskBudget = 100, 0
	if err := c.Validate(); err != nil {
		t.Errorf("FreezeAt 100, DiskBudget 0: %v", err)
	}
}

// A node registers nothing in the process's globals while it starts and
// runs: no handler on http.DefaultServeMux (such as /debug/pprof/), no
// collector in Prometheus's default registry (libp2p's would be, with
// its defaults). What the test binary's other imports register at init
// (net/http/pprof through a test helper) is there before and is not the
// node's; go list -deps shows the node's own code imports none of them.
func TestNoGlobalRegistration(t *testing.T) {
	paths := []string{"/debug/pprof/", "/debug/pprof/profile", "/debug/vars", "/metrics", "/"}
	patterns := func() []string {
		var ps []string
		for _, path := range paths {
			_, pattern := http.DefaultServeMux.Handler(httptest.NewRequest(http.MethodGet, path, nil))
			ps = append(ps, pattern)
		}
		return ps
	}
	muxBefore := patterns()
	before, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	cfg := indexernode.DefaultConfig()
	cfg.Dir, cfg.Store, cfg.P2P = t.TempDir(), "memory", "/ip4/127.0.0.1/tcp/0"
	r := runNode(t.Context(), t, cfg)
	defer r.stop()
	after, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		var names []string
		for _, f := range after {
			names = append(names, f.GetName())
		}
		t.Errorf("the default Prometheus registry grew from %d to %d families: %v", len(before), len(after), names)
	}
	if muxAfter := patterns(); !slices.Equal(muxAfter, muxBefore) {
		t.Errorf("http.DefaultServeMux patterns for %v: %q before the node, %q after", paths, muxBefore, muxAfter)
	}
}
