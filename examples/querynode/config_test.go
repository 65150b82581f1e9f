package querynode_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Validate names the field at fault, and New refuses what Validate
// refuses, closing the listener it was given.
func TestConfigValidate(t *testing.T) {
	base := querynode.DefaultConfig()
	base.Name, base.Dir = "q1", t.TempDir()
	if err := base.Validate(); err != nil {
		t.Fatalf("DefaultConfig with a name: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(c *querynode.Config)
		want string
	}{
		{"dir", func(c *querynode.Config) { c.Dir = "" }, "Config.Dir must not be empty"},
		{"name", func(c *querynode.Config) { c.Name = "" }, "Config.Name must not be empty"},
		{"layout", func(c *querynode.Config) { c.Layout = "" }, "Config.Layout must name the layout file"},
		{"store", func(c *querynode.Config) { c.Store = "leveldb" }, `Config.Store "leveldb": want pebble or memory`},
		{"cache", func(c *querynode.Config) { c.IndexCacheSize = -1 }, "Config.IndexCacheSize -1"},
		{"commit", func(c *querynode.Config) { c.CommitInterval = -time.Second }, "Config.CommitInterval -1s"},
		{"shutdown", func(c *querynode.Config) { c.ShutdownTimeout = 0 }, "Config.ShutdownTimeout 0s must be positive"},
		{"layout poll", func(c *querynode.Config) { c.LayoutPoll = -time.Second }, "Config.LayoutPoll -1s must not be negative"},
		{"shard hosts", func(c *querynode.Config) { c.ShardHosts = []string{"query-0:3100"} }, "Config.ShardHosts"},
	} {
		c := base
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := querynode.New(c, ln); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
		if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s: New failed and left its listener open (%v)", tc.name, err)
		}
	}
	if _, err := querynode.New(base, nil); err == nil || !strings.Contains(err.Error(), "listener") {
		t.Errorf("New without a listener: %v", err)
	}
}

// A Config round-trips through encoding/json, without its Logger.
func TestConfigJSON(t *testing.T) {
	c := querynode.DefaultConfig()
	c.Dir, c.Name, c.Layout, c.Store = "/var/lib/q1", "q1", "/etc/layout.json", "memory"
	c.Token, c.ShardHosts = "s3cret", []string{"query-0"}
	c.Logger = slog.New(slog.DiscardHandler)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back querynode.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	c.Logger = nil
	if !reflect.DeepEqual(back, c) || strings.Contains(string(b), "Logger") {
		t.Errorf("round trip:\n got %+v\nwant %+v\njson %s", back, c, b)
	}
}

// Close before Run releases the listener and makes Run fail with
// ErrRunTwice; Close is idempotent; Run runs once.
func TestLifecycle(t *testing.T) {
	dir := t.TempDir()
	newNode := func(name string) (*querynode.Node, net.Listener) {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		layout := filepath.Join(dir, name+".json")
		l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
			Nodes: []keyspace.Node{{Name: name, URL: "http://" + ln.Addr().String()}}, Current: []string{name}}
		if err := keyspace.Save(layout, l); err != nil {
			t.Fatal(err)
		}
		cfg := querynode.DefaultConfig()
		cfg.Dir, cfg.Name, cfg.Layout, cfg.Store = filepath.Join(dir, name), name, layout, "memory"
		n, err := querynode.New(cfg, ln)
		if err != nil {
			t.Fatal(err)
		}
		return n, ln
	}

	n, ln := newNode("q1")
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Close before Run left the listener open (%v)", err)
	}
	if err := n.Run(t.Context()); !errors.Is(err, querynode.ErrRunTwice) {
		t.Errorf("Run after Close = %v, want ErrRunTwice", err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	n, _ = newNode("q2")
	defer n.Close()
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	// An answer means that Run serves: the next Run is the second.
	resp, err := http.Get(n.URL() + keyspace.PathStatus)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := n.Run(ctx); !errors.Is(err, querynode.ErrRunTwice) {
		t.Errorf("second Run = %v, want ErrRunTwice", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
