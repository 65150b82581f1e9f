package pebble_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

// crashEnv names the directory a re-executed test binary writes into; its
// presence makes TestCrashWithoutWAL act as the child. crashModeEnv names
// the durability shortcut the child's store takes: a key of crashModes.
const (
	crashEnv     = "INDEXKIT_PEBBLE_CRASH_DIR"
	crashModeEnv = "INDEXKIT_PEBBLE_CRASH_MODE"
)

// crashModes are the shortcuts that lose unflushed index writes when the
// process is killed, each with the options that take it. The child adds a
// small memtable, so that Pebble also flushes on its own.
var crashModes = map[string][]pebble.Option{
	"nowal": {pebble.WithoutWAL()},
	// Runs small enough that the child also ingests tables and commits
	// batches on its own between Flushes.
	"runs":       {pebble.WithSortedRuns(192 << 10)},
	"runs-nowal": {pebble.WithSortedRuns(192 << 10), pebble.WithoutWAL()},
}

// What the child writes: flushedPuts Puts, a Flush, then Puts for ever
// (until it is killed), each of crashPut multihashes under its own
// context.
const (
	flushedPuts = 20
	crashPut    = 500
)

func crashValue(i int) store.Value {
	return store.Value{ProviderID: storetest.PeerID("crash"), ContextID: fmt.Appendf(nil, "ctx-%d", i), Metadata: []byte("md")}
}

func crashMultihashes(i int) []multihash.Multihash {
	return storetest.Multihashes(fmt.Sprint("crash-", i), crashPut)
}

// A child process writes to a store opened WithoutWAL, or with sorted
// runs, flushes, writes more and is killed with SIGKILL in the middle of
// it. Reopened, the store holds everything written before the Flush, each
// later Put whole or in part (never a wrong value), and putting everything
// again completes it.
func TestCrashWithoutWAL(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashWriter(t, dir, crashModes[os.Getenv(crashModeEnv)])
		return
	}
	lane.Integration(t, "re-executes the test binary")
	for _, mode := range slices.Sorted(maps.Keys(crashModes)) {
		t.Run(mode, func(t *testing.T) { crashTrials(t, mode) })
	}
}

func crashTrials(t *testing.T, mode string) {
	ctx := context.Background()
	for trial := range 3 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			dir := t.TempDir()
			// Kill after 1, 8 and 64 Puts past the Flush: within the first
			// memtable, and later. Under the race detector, which slows the
			// child's writes and the checks about tenfold, after 1, 4 and
			// 16 (16 Puts still exceed the sorted runs' 192 KiB).
			after := 1 << (3 * trial)
			if raceEnabled {
				after = 1 << (2 * trial)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWithoutWAL$", "-test.count=1", "-test.v=false")
			cmd.Env = append(os.Environ(), crashEnv+"="+dir, crashModeEnv+"="+mode)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			flushed, puts := false, 0
			for sc.Scan() {
				switch sc.Text() {
				case "flushed":
					flushed = true
				case "put":
					if flushed {
						puts++
					}
				}
				if puts >= after {
					break
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill: %v", err)
			}
			_ = cmd.Wait()
			if !flushed || puts < after {
				t.Fatalf("child stopped after flushed=%v and %d Puts", flushed, puts)
			}

			s, err := pebble.Open(dir, append(crashModes[mode], pebble.WithCacheSize(1<<20))...)
			if err != nil {
				t.Fatalf("reopen after the kill: %v", err)
			}
			defer s.Close()
			// Before the Flush: all there.
			for i := range flushedPuts {
				want := crashValue(i)
				for _, mh := range crashMultihashes(i) {
					got, err := s.Get(ctx, mh)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != 1 || !got[0].Equal(want) {
						t.Fatalf("Put %d, before the Flush: Get = %v, want [%v]", i, got, want)
					}
				}
			}
			// Nothing corrupt: every entry reads, and has the value of its Put.
			n := 0
			for e, err := range s.All(ctx) {
				if err != nil {
					t.Fatalf("All after the kill: %v", err)
				}
				if len(e.Values) > 1 {
					t.Fatalf("%s: %d values", e.Multihash, len(e.Values))
				}
				n++
			}
			t.Logf("killed %d Puts after the Flush; %d multihashes survived, %d of them flushed", puts, n, flushedPuts*crashPut)
			// Putting again completes what was cut off.
			last := flushedPuts + puts + 1
			for i := range last {
				if err := s.Put(ctx, crashValue(i), crashMultihashes(i)...); err != nil {
					t.Fatal(err)
				}
			}
			for i := range last {
				for _, mh := range crashMultihashes(i) {
					if got, err := s.Get(ctx, mh); err != nil || len(got) != 1 || !got[0].Equal(crashValue(i)) {
						t.Fatalf("Put %d again: Get = %v, %v", i, got, err)
					}
				}
			}
		})
	}
}

// crashWriter is the child: flushedPuts Puts, a Flush, then Puts until it
// is killed, announcing each on standard output.
func crashWriter(t *testing.T, dir string, opts []pebble.Option) {
	ctx := context.Background()
	if opts == nil {
		t.Fatalf("unknown %s", crashModeEnv)
	}
	// A small memtable, so that Pebble also flushes on its own while the
	// child runs.
	s, err := pebble.Open(dir, append(opts, pebble.WithMemTableSize(256<<10), pebble.WithCacheSize(1<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if i == flushedPuts {
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			fmt.Println("flushed")
		}
		if err := s.Put(ctx, crashValue(i), crashMultihashes(i)...); err != nil {
			t.Fatal(err)
		}
		fmt.Println("put")
	}
}
