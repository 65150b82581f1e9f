package scale_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/internal/scale"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/internal/testbed/deadline"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
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
	lane.Integration(t, "starts a node and a raw Pebble as processes")
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
			c.Settle = time.Minute
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
			if n.BytesIn <= 0 || n.BytesRewritten < 0 {
				t.Errorf("node's Pebble figures missing: %+v", n)
			}
			if st := n.Settled; st == nil || !st.Done || st.CPU < 0 || st.BytesRewritten < n.BytesRewritten || st.Disk <= 0 {
				t.Errorf("settling figures missing or unsettled: %+v", st)
			}
			if u := r.Unpaced; u == nil || u.Multihashes != n.Multihashes || u.Wall <= 0 || u.RSS == 0 || u.Disk <= 0 {
				t.Errorf("figures of the node with queries first off missing: %+v", u)
			}
			// CPU comes from /proc in ticks of 10 ms: a raw run of a few
			// thousand keys can end inside one tick and read 0.
			if r.Raw == nil || r.Raw.Multihashes != n.Multihashes || r.Raw.CPU < 0 || (r.Raw.CPU == 0 && r.Raw.Wall >= 50*time.Millisecond) ||
				r.Raw.RSS == 0 || r.Raw.Disk <= 0 {
				t.Errorf("raw figures missing: %+v", r.Raw)
			}
			// After ingest with 1 and 8 clients, during ingest with queries
			// first on and off, the raw gets with 1 and 8.
			if len(r.Finds) != 6 {
				t.Fatalf("%d find series, want 6: %+v", len(r.Finds), r.Finds)
			}
			for _, l := range r.Finds {
				if strings.Contains(l.Name, "during ingest") {
					if l.Found != l.N { // only multihashes the node reported indexed are probed
						t.Errorf("%s: found %d of %d", l.Name, l.Found, l.N)
					}
					if l.N > 0 && (l.Late == nil || l.Late.P50 < 0 || l.Late.P99 < l.Late.P50) {
						t.Errorf("%s: the finder's own lateness is %+v, want it measured", l.Name, l.Late)
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
				"| indexkit node, queries first off |", "| queries first / off |", "queries first off, during ingest",
				"| ingest, then settled |",
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
		err := scale.Main(deadline.Context(t, time.Minute), args, &bytes.Buffer{}, &stderr)
		if err == nil {
			t.Errorf("Main(%q) = nil, want an error", args)
		}
	}
	if err := scale.Main(deadline.Context(t, time.Minute), []string{"-h"}, &bytes.Buffer{}, &stderr); err != flag.ErrHelp {
		t.Errorf("-h: %v", err)
	}
	if !strings.Contains(stderr.String(), "-probe-rate") {
		t.Errorf("usage lacks the flags:\n%s", stderr.String())
	}
}

// TestSharded runs the sharded layer at a tiny size (20k multihashes, 3
// query nodes, R = 2), alone and then with a join of a fourth, and reads
// every query node's store itself: each multihash of the chains,
// generated again here from their seeds, is held by exactly R query
// nodes, each an owner of it in the final layout, and nothing else is
// held; the report's counts and the join's copy and drop agree. Without
// the join, the counts also say that the run waited for the outboxes to
// drain before it stopped the ingest node.
func TestSharded(t *testing.T) {
	lane.Integration(t, "starts a sharded pool as processes")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, join := range []bool{false, true} {
		t.Run(map[bool]string{false: "ingest", true: "join"}[join], func(t *testing.T) { testSharded(t, exe, join) })
	}
}

func testSharded(t *testing.T, exe string, join bool) {
	c := scale.DefaultConfig()
	c.Multihashes, c.MhsPerAd = 20_000, 1000
	c.Samples, c.Clients, c.ProbeRate, c.Raw = 50, 4, 0, false
	c.Sharded, c.Replication, c.Join, c.ShardBatchBytes = 3, 2, join, 64<<10
	c.JoinBaseline = false // the counts below are of one join
	// The ingest run keeps its layout in a file, the join on etcd (when
	// installed: then it times the epochs too).
	c.LayoutStore = "file"
	if join && etcdAvailable() {
		c.LayoutStore = "etcd"
	}
	c.Dir, c.Exe, c.Keep = t.TempDir(), exe, true
	r, err := scale.Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	sf := r.Sharded
	nodes := 3
	if join {
		nodes = 4
	}
	if sf == nil || (sf.Join != nil) != join || len(sf.Nodes) != nodes {
		t.Fatalf("sharded figures missing: %+v", sf)
	}
	if sf.Store != c.LayoutStore || (sf.Epochs != nil) != (c.LayoutStore == "etcd") {
		t.Fatalf("layout in %q (epochs %+v), want %q", sf.Store, sf.Epochs, c.LayoutStore)
	}
	if e := sf.Epochs; e != nil {
		if len(e.Times) != 20 || e.Processes != 4 || e.P50() <= 0 {
			t.Fatalf("epoch figures %+v: want 20 times over 4 processes", *e)
		}
		t.Logf("a new epoch reached the %d processes in p50 %v, max %v", e.Processes, e.P50(), e.Max())
	}
	if sf.Total.CPU <= sf.Ingest.CPU || sf.Total.Wall < sf.Walked || sf.Total.Disk <= 0 {
		t.Errorf("sharded figures: %+v", sf.Total)
	}
	if len(sf.Outboxes) != 3 {
		t.Errorf("outboxes when measured: %+v, want one per query node", sf.Outboxes)
	}
	for q, o := range sf.Outboxes {
		if o.Pending != 0 || o.Head == 0 || o.Acked != o.Head {
			t.Errorf("outbox towards %s when measured: %+v, want every batch acknowledged", q, o)
		}
	}
	if j := sf.Join; j != nil && (j.Copy <= 0 || j.Drop <= 0 || j.Total < j.Copy+j.Drop) {
		t.Errorf("join figures: %+v", *j)
	}

	// The chains' multihashes, from their seeds: publisher i has seed
	// Seed+i and 5 ads of 1,000.
	holders := make(map[string][]int) // index key -> query nodes holding it
	var mhs []multihash.Multihash
	for i := range c.Publishers {
		ch, err := chaingen.NewOnDemand(t.Context(), chaingen.Config{Seed: c.Seed + uint64(i), Ads: 5, MhsPerAd: 1000, ChunkSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for j := range ch.Multihashes() {
			mh := ch.Multihash(j)
			k := string(store.IndexKey(mh))
			if _, dup := holders[k]; !dup {
				holders[k] = nil
				mhs = append(mhs, mh)
			}
		}
	}
	if len(mhs) != 20_000 || r.Sharded.Total.Multihashes != 20_000 {
		t.Fatalf("%d distinct multihashes generated, %d ingested; want 20,000", len(mhs), r.Sharded.Total.Multihashes)
	}
	layout := sf.Layout
	place, err := keyspace.NewPlacement(layout)
	if err != nil {
		t.Fatal(err)
	}
	if layout.Phase != keyspace.PhaseStable || len(layout.Current) != nodes {
		t.Fatalf("final layout %+v, want stable over %d nodes", layout, nodes)
	}
	var sum int64
	for qi, q := range sf.Nodes {
		st, err := pebble.Open(filepath.Join(q.Dir, "index"), pebble.WithDigestPrefixKeys())
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for e, err := range st.All(t.Context()) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			k := string(store.IndexKey(e.Multihash))
			hs, ok := holders[k]
			if !ok {
				t.Fatalf("query node %s holds %s, which no chain has", q.Name, e.Multihash.B58String())
			}
			holders[k] = append(hs, qi)
		}
		st.Close()
		if n != q.Keys {
			t.Errorf("query node %s: %d keys in its store, the report says %d", q.Name, n, q.Keys)
		}
		sum += n
	}
	if want := int64(c.Replication * len(mhs)); sum != want {
		t.Errorf("the query nodes hold %d keys in all, want R × %d = %d", sum, len(mhs), want)
	}
	owned := make([]int64, len(sf.Nodes))
	for _, mh := range mhs {
		hs := holders[string(store.IndexKey(mh))]
		if len(hs) != c.Replication {
			t.Fatalf("%s is held by %d query nodes %v, want %d", mh.B58String(), len(hs), hs, c.Replication)
		}
		for _, qi := range hs {
			if !place.Owns(place.Node(sf.Nodes[qi].Name), mh) {
				t.Fatalf("%s is held by %s, which does not own it in the final layout", mh.B58String(), sf.Nodes[qi].Name)
			}
			owned[qi]++
		}
	}
	for qi, q := range sf.Nodes {
		if owned[qi] != q.Keys {
			t.Errorf("query node %s holds %d keys, owns %d of the chains'", q.Name, q.Keys, owned[qi])
		}
	}
	// The old owners drop by ranges (their stores keep no populations),
	// uncounted: the count of what each holds above is the check.
	if j := sf.Join; j != nil && (j.Copied != sf.Nodes[3].Keys || j.Dropped != 0 || j.DropRanges == 0) {
		t.Errorf("join copied %d keys, the new node holds %d, the old owners dropped %d keys one by one and made %d range deletions: want the first two equal, no key by key, some ranges",
			j.Copied, sf.Nodes[3].Keys, j.Dropped, j.DropRanges)
	}
	fronts := 0
	for _, l := range r.Finds {
		if strings.HasPrefix(l.Name, "front end") || strings.HasPrefix(l.Name, "a key's first owner") {
			fronts++
			if l.N == 0 || l.Found != l.N {
				t.Errorf("%s: found %d of %d, want every sample", l.Name, l.Found, l.N)
			}
		}
	}
	if fronts != 4 {
		t.Errorf("%d find series through the front end and the owners, want 4: %+v", fronts, r.Finds)
	}
	var out bytes.Buffer
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	wants := []string{"| ingest node + 3 query nodes |", "front end -layout over 3 query nodes, 4 clients", "| sharded / local |", "40,000 (2.000 × 20,000"}
	if join {
		wants = append(wants, "| query node q4 (joined", "| q4 joins 3 nodes |")
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tables lack %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}

// etcdAvailable reports whether the etcd binary is installed.
func etcdAvailable() bool {
	if _, err := exec.LookPath("etcd"); err == nil {
		return true
	}
	_, err := os.Stat("/usr/bin/etcd")
	return err == nil
}
