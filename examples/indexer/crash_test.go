package main

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/store/pebble"
)

// counter returns the value of a Prometheus counter of the node's
// /metrics, 0 if it is not there yet.
func counter(t *testing.T, metricsURL, name string) int {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, metricsURL+"/metrics", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return int(f)
		}
	}
	return 0
}

// A node whose index has no write-ahead log (-index-no-wal), keyed on
// digest prefixes (the default): a
// node ingesting a signed chain over HTTP is killed with SIGKILL at random
// points of its ingest, several times over, and restarted on the same
// directory each time; once it has walked to the head, its index equals
// the chain's model. A kill loses the index writes since the last
// checkpoint, which the restarted node applies again.
func TestCrashWithoutWAL(t *testing.T) {
	t.Parallel()
	lane.Integration(t, "kills and restarts node processes")
	testNodeCrash(t, "-index-no-wal")
}

// The same with the log on and sorted runs (-index-run-size, on by
// default) of 512 KiB, which fill about once per checkpoint here: the node
// ingests tables between checkpoints and at them, and a kill loses the
// index writes gathered since the last checkpoint (a checkpoint recorded
// before its runs were applied loses ads for good: the test then fails).
func TestCrashSortedRuns(t *testing.T) {
	t.Parallel()
	lane.Integration(t, "kills and restarts node processes")
	testNodeCrash(t, "-index-run-size", "524288")
}

func testNodeCrash(t *testing.T, flags ...string) {
	noWAL := slices.Contains(flags, "-index-no-wal")
	chain, err := chaingen.Generate(chaingen.Config{Seed: 17, Ads: 240, MhsPerAd: 250, ChunkSize: 50,
		RemoveEvery: 9, UpdateEvery: 7, ReuseEvery: 5, SharedMhs: 10, ExtendedEvery: 11, PublisherSigns: true})
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(t, chain)
	dir := t.TempDir()
	bin := proctest.Build(t, indexerPkg)
	rng := rand.New(rand.NewPCG(17, 1))
	const applied = "indexkit_indexer_ads_applied_total"
	kills := 0
	for range 6 {
		n := startNode(t, bin, dir, flags...)
		pub.announce(t, n.url("ingest"))
		// Kill once the node has applied a random number of ads in this
		// run (or has walked to the head: a kill then is one too); every
		// other time just as it checkpoints, after a multiple of
		// ingest.DefaultCheckpointEvery ads, where a checkpoint recorded
		// before the store is flushed would lose ads for good.
		at := 1 + rng.IntN(chain.Len()/2)
		if kills%2 == 1 {
			at = ingest.DefaultCheckpointEvery * (1 + rng.IntN(2))
		}
		deadline := time.Now().Add(waitTimeout)
		got, head := 0, false
		for got < at && !head {
			if time.Now().After(deadline) {
				t.Fatalf("the node applied %d of %d ads in %v", got, at, waitTimeout)
			}
			got, head = counter(t, n.url("metrics"), applied), lastHead(t, n.url("admin")).Equals(chain.Head())
		}
		n.Signal(syscall.SIGKILL)
		n.Wait(waitTimeout)
		kills++
		t.Logf("kill %d: after %d ads applied in this run (at the head: %v)", kills, got, head)
	}
	n := startNode(t, bin, dir, flags...)
	pub.announce(t, n.url("ingest"))
	waitFor(t, "the node to walk to the head", func() bool { return lastHead(t, n.url("admin")).Equals(chain.Head()) })
	n.stop()
	t.Logf("killed the node %d times", kills)
	// Without a WAL, Pebble's log files hold next to nothing (with it, the
	// last one holds the writes since the last memtable flush: most of
	// the index here).
	logs, _ := filepath.Glob(filepath.Join(dir, "index", "*.log"))
	var logBytes int64
	for _, l := range logs {
		fi, err := os.Stat(l)
		if err != nil {
			t.Fatal(err)
		}
		logBytes += fi.Size()
	}
	if noWAL && logBytes > 4<<10 {
		t.Errorf("the index's log files hold %d bytes; -index-no-wal writes none", logBytes)
	}

	st, err := pebble.Open(filepath.Join(dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.DigestPrefixKeys() {
		t.Error("the node's index keeps whole multihashes; by default it keys them on digest prefixes")
	}
	if err := chain.Model().Equal(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}
