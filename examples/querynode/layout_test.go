package querynode_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// With LayoutPoll, a running node takes the next epoch once the file
// holds it, with no ReloadLayout call.
func TestLayoutPoll(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "layout.json")
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://" + ln.Addr().String()}}, Current: []string{"q1"}}
	if err := keyspace.Save(path, l); err != nil {
		t.Fatal(err)
	}
	cfg := querynode.DefaultConfig()
	cfg.Dir, cfg.Name, cfg.Layout, cfg.Store, cfg.LayoutPoll = filepath.Join(dir, "q1"), "q1", path, "memory", 5*time.Millisecond
	n, err := querynode.New(cfg, ln)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	l.Epoch = 2
	if err := keyspace.Save(path, l); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); n.Shard().Layout().Epoch != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("epoch %d 10s after the file moved to epoch 2", n.Shard().Layout().Epoch)
		}
	}
}
