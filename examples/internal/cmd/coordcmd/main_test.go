package coordcmd_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/coordcmd"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/layouttest"
)

func TestFlags(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-join", "q1"}, "want NAME=URL"},
		{[]string{"-join", "q1=http://127.0.0.1:1", "-leave", "q2"}, "not both"},
		{[]string{"-leave", "q2"}, "-layout is required"},
		{[]string{"-layout", "l.json", "-seed", "x.json"}, "-seed is for an etcd layout"},
		{[]string{"-layout", "etcd://127.0.0.1:1/p", "-ingest", "w=http://x"}, "are for a layout file"},
		{[]string{"-layout", "etcd:///p"}, "not etcd://"},
		{[]string{"stray"}, "unexpected arguments"},
	} {
		var stderr bytes.Buffer
		err := coordcmd.Main(ctx, tc.args, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one saying %q", tc.args, err, tc.want)
		}
	}
	var stderr bytes.Buffer
	if err := coordcmd.Main(ctx, []string{"-h"}, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-join") {
		t.Errorf("-h: %v\n%s", err, stderr.String())
	}
}

// TestSeed: -seed alone publishes a layout file's layout into an empty
// prefix and exits; a second -seed leaves the published one alone.
func TestSeed(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	prefix := etcdtest.Prefix(t, cli, "seed")
	file := filepath.Join(t.TempDir(), "layout.json")
	if err := keyspace.Save(file, layouttest.Layout(3)); err != nil {
		t.Fatal(err)
	}
	spec := "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://") + "/" + prefix
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 2 {
		var stderr bytes.Buffer
		if err := coordcmd.Main(ctx, []string{"-layout", spec, "-seed", file}, &stderr); err != nil {
			t.Fatalf("-seed: %v\n%s", err, stderr.String())
		}
	}
	st := storeAt(t, prefix, c.Endpoints()...)
	l, _, err := st.Load(ctx)
	if err != nil || l.Epoch != 1 || len(l.Current) != 3 {
		t.Fatalf("after -seed: %+v, %v; want epoch 1 over 3 nodes", l, err)
	}
}
