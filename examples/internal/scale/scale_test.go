package scale_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/indexkit/indexkit/examples/internal/scale"
)

// TestMain runs the benchmark's children: the test binary is the program
// the benchmark starts again with scale.ChildCommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == scale.ChildCommand {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := scale.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			os.Stderr.WriteString("scale child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRun runs the whole benchmark at a tiny size in both shapes (20k
// multihashes in ads of 1,000, 4k in ads of 1 to 16): a node
// and a raw baseline as child processes, every figure measured, every
// multihash sampled found, and the tables written.
func TestRun(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range []string{scale.ShapeAds, scale.ShapeContexts} {
		t.Run(shape, func(t *testing.T) {
			c := scale.DefaultConfig()
			c.Multihashes, c.Shape = 20_000, shape
			if shape == scale.ShapeAds {
				c.MhsPerAd = 1000 // 5 ads per publisher
			} else {
				c.Multihashes = 4000 // about 120 ads per publisher, each verified: slow under -race
			}
			c.Samples, c.Clients, c.ProbeRate = 200, 8, 200
			c.Dir, c.Exe = t.TempDir(), exe
			c.NodeFlags = []string{"-log-level", "info"} // passed through, harmless
			r, err := scale.Run(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			n := r.Node
			if n.Multihashes < c.Multihashes || n.Wall <= 0 || n.CPU <= 0 || n.RSS == 0 || n.PeakRSS < n.RSS || n.Disk <= 0 {
				t.Errorf("node figures missing: %+v", n)
			}
			if r.Raw == nil || r.Raw.Multihashes != n.Multihashes || r.Raw.CPU <= 0 || r.Raw.RSS == 0 || r.Raw.Disk <= 0 {
				t.Errorf("raw figures missing: %+v", r.Raw)
			}
			if len(r.Finds) != 5 {
				t.Fatalf("%d find series, want 5: %+v", len(r.Finds), r.Finds)
			}
			for _, l := range r.Finds {
				if strings.Contains(l.Name, "during ingest") {
					if l.Found != l.N { // only multihashes the node reported indexed are probed
						t.Errorf("%s: found %d of %d", l.Name, l.Found, l.N)
					}
					continue
				}
				if l.N == 0 || l.Found != l.N || l.P50 <= 0 || l.P99 < l.P50 {
					t.Errorf("%s: %+v, want every sample found", l.Name, l)
				}
			}
			var out bytes.Buffer
			if err := r.WriteTable(&out); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"| indexkit node |", "| raw Pebble, same keys |", "| node / raw |",
				"shape " + shape, "node, 8 clients, after ingest", "during ingest", "raw Pebble get, 8 goroutines"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the tables lack %q:\n%s", want, out.String())
				}
			}
			t.Logf("\n%s", out.String())
			entries, _ := os.ReadDir(c.Dir)
			if len(entries) != 0 {
				t.Errorf("left %d entries in the directory, want none without Keep", len(entries))
			}
		})
	}
}

// TestFlags checks the command line: counts, node flags after -- and
// through -node-flag, and errors.
func TestFlags(t *testing.T) {
	var stderr bytes.Buffer
	for _, args := range [][]string{{"-mh", "ten"}, {"-shape", "blobs", "-mh", "1k"}, {"-mh", "0"}, {"stray"}} {
		err := scale.Main(t.Context(), args, &bytes.Buffer{}, &stderr)
		if err == nil {
			t.Errorf("Main(%q) = nil, want an error", args)
		}
	}
	if err := scale.Main(t.Context(), []string{"-h"}, &bytes.Buffer{}, &stderr); err != flag.ErrHelp {
		t.Errorf("-h: %v", err)
	}
	if !strings.Contains(stderr.String(), "-probe-rate") {
		t.Errorf("usage lacks the flags:\n%s", stderr.String())
	}
}
