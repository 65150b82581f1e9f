package ingest_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	leveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
)

// crashEnv names the directory a re-executed test binary ingests into;
// its presence makes TestCrash act as the child. crashModeEnv names the
// store's durability shortcut: a key of crashModes.
const (
	crashEnv     = "INDEXKIT_INGEST_CRASH_DIR"
	crashModeEnv = "INDEXKIT_INGEST_CRASH_MODE"
)

// crashModes are the ways the store is opened: with its write-ahead log,
// without it, and with sorted runs small enough that the child ingests
// tables as well as committing batches between checkpoints.
var crashModes = map[string][]pebble.Option{
	"wal":   nil,
	"nowal": {pebble.WithoutWAL()},
	"runs":  {pebble.WithSortedRuns(48 << 10)},
}

var crashConfig = chaingen.Config{Seed: 77, Ads: 120, MhsPerAd: 400, ChunkSize: 50,
	RemoveEvery: 4, UpdateEvery: 5, ReuseEvery: 6, SharedMhs: 10, ExtendedEvery: 7}

func openCrash(t testing.TB, dir string, mode string) (store.Store, *leveldb.Datastore) {
	t.Helper()
	opts, ok := crashModes[mode]
	if !ok {
		t.Fatalf("crash mode %q", mode)
	}
	st, err := pebble.Open(filepath.Join(dir, "store"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := leveldb.NewDatastore(filepath.Join(dir, "walker"), nil)
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	return st, ds
}

// A child process ingesting a chain into pebble, with walker state in
// LevelDB, is killed with SIGKILL at random points, several times over;
// the walk resumed after the last kill ends with the store equal to the
// model. It does so with the store's write-ahead log, without it
// (pebble.WithoutWAL), and with sorted runs (pebble.WithSortedRuns): in
// the last two a kill loses the index writes since the last checkpoint's
// Flush.
func TestCrash(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(t, dir, os.Getenv(crashModeEnv))
		return
	}
	lane.Integration(t, "re-executes the test binary")
	for _, mode := range slices.Sorted(maps.Keys(crashModes)) {
		t.Run(mode, func(t *testing.T) { testCrash(t, mode) })
	}
}

func testCrash(t *testing.T, mode string) {
	for trial := range 3 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(uint64(trial), 99))
			kills := 0
			for range 4 {
				killAt := 1 + rng.IntN(2*crashConfig.Ads)
				finished := runCrashChild(t, dir, killAt, mode)
				if finished {
					break
				}
				kills++
			}
			t.Logf("killed the child %d times", kills)

			st, ds := openCrash(t, dir, mode)
			defer ds.Close()
			defer st.Close()
			chain := generate(t, crashConfig)
			srcs := newSources()
			srcs.set(chain.Publisher, chain.Source())
			ing := newIngester(t, st, ds, srcs)
			if err := ing.Sync(context.Background(), chain.Publisher, testAddrs, chain.Head()); err != nil {
				t.Fatal(err)
			}
			equalModel(t, chain.Model(), st)
			// The provider record may lag the ads applied by up to a
			// checkpoint (it is written at the checkpoint): still, it
			// ends at the head.
			info, err := st.Provider(context.Background(), chain.Provider)
			if err != nil {
				t.Fatal(err)
			}
			if info.LastAdvertisement != chain.Head() {
				t.Errorf("provider record: LastAdvertisement %s, want the head %s", info.LastAdvertisement, chain.Head())
			}
		})
	}
}

// runCrashChild runs the child until it reports killAt steps, then kills
// it; it reports whether the child finished first.
func runCrashChild(t *testing.T, dir string, killAt int, mode string) bool {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir, crashModeEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps, finished := 0, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		switch sc.Text() {
		case "step":
			steps++
		case "done":
			finished = true
		}
		if steps >= killAt || finished {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !finished {
		t.Fatalf("kill child: %v", err)
	}
	for sc.Scan() {
		if sc.Text() == "done" {
			finished = true
		}
	}
	_ = cmd.Wait()
	if !finished && steps < killAt {
		t.Fatalf("child stopped after %d steps without finishing", steps)
	}
	return finished
}

func crashChild(t *testing.T, dir string, mode string) {
	st, ds := openCrash(t, dir, mode)
	chain := generate(t, crashConfig)
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	step := func() { fmt.Println("step") }
	ing := newIngester(t, st, ds, srcs, ingest.WithCheckpoint(5, time.Hour), ingest.WithBatchSize(150),
		ingest.WithHooks(ingest.Hooks{
			AdWalked:  func(peer.ID, cid.Cid) { step() },
			AdApplied: func(peer.ID, peer.ID, cid.Cid, time.Duration) { step() },
		}))
	if err := ing.Sync(context.Background(), chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatalf("child: %v", err)
	}
	fmt.Println("done")
	_ = ds.Close()
	_ = st.Close()
}
