package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// crashEnv names the directory a re-executed test binary writes to; its
// presence makes the crash subtest act as the child.
const crashEnv = "INDEXKIT_STORETEST_CRASH_DIR"

// RunPersistent runs the suite for stores kept on disk: everything of [Run],
// then [RunReopen] and [RunCrash].
//
// open must open (creating if needed) the store in dir; it is called once
// per subtest and again to reopen.
//
// A backend runs RunPersistent once, on its default options. A variant
// whose options change only how the store reads (a cache size, say) runs
// [Run], and [RunReopen] if its reads after a restart differ; one that
// changes what reaches the disk and when runs RunPersistent again, or
// [RunCrash] beside its other checks.
func RunPersistent(t *testing.T, open func(dir string) (store.Store, error)) {
	if os.Getenv(crashEnv) != "" { // the crash child: only its subtest
		RunCrash(t, open)
		return
	}
	Run(t, func(t *testing.T) store.Store {
		s, err := open(t.TempDir())
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	})
	RunReopen(t, open)
	RunCrash(t, open)
}

// RunReopen runs the suite's subtests that close a store and open it again
// on the same directory: writes, updates, removals and provider records
// (subtest Reopen) and samples (SampleReopen) come back as they were.
func RunReopen(t *testing.T, open func(dir string) (store.Store, error)) {
	t.Run("Reopen", func(t *testing.T) { testReopen(t, open) })
	t.Run("SampleReopen", func(t *testing.T) { testSampleReopen(t, open) })
}

// RunCrash runs the crash subtest (Crash): it SIGKILLs a child process
// (this test binary, re-executed with the -run pattern of the subtest) in
// the middle of a stream of writes and checks that the reopened store
// holds every write flushed before the kill, and only well-formed values.
// The child starts a process, so the subtest is the integration lane's:
// -short skips it.
func RunCrash(t *testing.T, open func(dir string) (store.Store, error)) {
	if dir := os.Getenv(crashEnv); dir != "" {
		t.Run("Crash", func(t *testing.T) { crashChild(t, dir, open) })
		return
	}
	t.Run("Crash", func(t *testing.T) { testCrash(t, open) })
}

func testReopen(t *testing.T, open func(string) (store.Store, error)) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := open(dir)
	if err != nil {
		t.Fatal(err)
	}
	keep := value("p1", "ctx1", "md1")
	gone := value("p1", "ctx2", "md2")
	updated := value("p2", "ctx1", "before")
	mhs := Multihashes("reopen", 200)
	mustPut(t, s, keep, mhs...)
	mustPut(t, s, gone, mhs[:50]...)
	mustPut(t, s, updated, mhs[100:]...)
	if err := s.UpdateMetadata(ctx, updated.ProviderID, updated.ContextID, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProviderContext(ctx, gone.ProviderID, gone.ContextID); err != nil {
		t.Fatal(err)
	}
	info := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: keep.ProviderID}, LastError: "x"}
	if err := s.PutProvider(ctx, info); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, err = open(dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	after := value("p2", "ctx1", "after")
	for i, mh := range mhs {
		if i >= 100 {
			expectValues(t, s, mh, keep, after)
		} else {
			expectValues(t, s, mh, keep)
		}
	}
	got, err := s.Provider(ctx, keep.ProviderID)
	if err != nil || got.LastError != "x" {
		t.Fatalf("provider record after reopen: %+v, %v", got, err)
	}
	// Record IDs are not reused across a restart: the removed context, put
	// again, must not bring back its old multihashes.
	fresh := Multihash("reopen-fresh", 0)
	mustPut(t, s, gone, fresh)
	expectValues(t, s, fresh, gone)
	expectValues(t, s, mhs[0], keep)
}

// The crash child writes rounds of puts. Round r puts crashRoundSize
// multihashes under context r; every third round also updates the metadata
// of round r-1, every fifth removes context r-2. After each round it flushes
// and reports "flushed r" on stdout, except every fourth round, which it
// leaves unflushed until the next.
const (
	crashRoundSize = 500
	crashMaxRounds = 2000
	crashKillAfter = 25
)

func crashValue(r int, updated bool) store.Value {
	md := fmt.Sprint("md-", r)
	if updated {
		md += "-updated"
	}
	return store.Value{ProviderID: PeerID("crash"), ContextID: []byte(fmt.Sprint("ctx-", r)), Metadata: []byte(md)}
}

func crashChild(t *testing.T, dir string, open func(string) (store.Store, error)) {
	ctx := context.Background()
	s, err := open(dir)
	if err != nil {
		t.Fatalf("child open: %v", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for r := 0; r < crashMaxRounds && time.Now().Before(deadline); r++ {
		if err := s.Put(ctx, crashValue(r, false), crashMultihashes(r)...); err != nil {
			t.Fatalf("child put: %v", err)
		}
		if r%3 == 0 && r > 0 {
			if err := s.UpdateMetadata(ctx, PeerID("crash"), []byte(fmt.Sprint("ctx-", r-1)), crashValue(r-1, true).Metadata); err != nil {
				t.Fatalf("child update: %v", err)
			}
		}
		if r%5 == 0 && r >= 2 {
			if err := s.RemoveProviderContext(ctx, PeerID("crash"), []byte(fmt.Sprint("ctx-", r-2))); err != nil {
				t.Fatalf("child remove: %v", err)
			}
		}
		if r%4 == 3 {
			continue
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("child flush: %v", err)
		}
		fmt.Printf("flushed %d\n", r)
	}
	_ = s.Close()
}

func crashMultihashes(r int) []multihash.Multihash {
	return Multihashes(fmt.Sprint("crash-", r), crashRoundSize)
}

// crashState says what the store may hold for round r once round flushed
// has been flushed. Operations of later rounds may or may not have landed
// before the kill, so the context may also be removed (mayBeGone), and its
// metadata may be either form (eitherMetadata).
func crashState(r, flushed int) (want store.Value, removed, mayBeGone, eitherMetadata bool) {
	removesR := r+2 >= 2 && (r+2)%5 == 0
	updatesR := (r+1)%3 == 0
	removed = removesR && r+2 <= flushed
	mayBeGone = removesR && r+2 > flushed
	eitherMetadata = updatesR && r+1 > flushed
	return crashValue(r, updatesR && r+1 <= flushed), removed, mayBeGone, eitherMetadata
}

func testCrash(t *testing.T, open func(string) (store.Store, error)) {
	lane.Integration(t, "re-executes the test binary")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	flushed := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var r int
		if n, _ := fmt.Sscanf(sc.Text(), "flushed %d", &r); n == 1 {
			flushed = r
			if flushed >= crashKillAfter {
				break
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	_ = cmd.Wait()
	if flushed < crashKillAfter {
		t.Fatalf("child reported only round %d flushed before it stopped (want %d)", flushed, crashKillAfter)
	}
	t.Logf("killed the child after round %d was flushed", flushed)

	s, err := open(dir)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	for r := 0; r <= flushed; r++ {
		want, removed, mayBeGone, either := crashState(r, flushed)
		for i, mh := range crashMultihashes(r) {
			vals := mustGet(t, s, mh)
			switch {
			case removed && len(vals) != 0:
				t.Fatalf("round %d mh %d: removed context still has %s", r, i, fmtValues(vals))
			case removed, mayBeGone && len(vals) == 0:
				continue
			case len(vals) != 1:
				t.Fatalf("round %d mh %d: %s, want %s", r, i, fmtValues(vals), fmtValues([]store.Value{want}))
			case vals[0].Equal(want), either && vals[0].Equal(crashValue(r, true)):
			default:
				t.Fatalf("round %d mh %d: %s, want %s", r, i, fmtValues(vals), fmtValues([]store.Value{want}))
			}
		}
	}
	// A population holds every multihash Get finds in its context and
	// only multihashes put in it, and a round flushed whole has all of
	// its own. (An engine that loses index writes made since the last
	// Flush while keeping the rest, as store/pebble's WithSortedRuns
	// does, may keep population entries of a round whose index entries
	// it lost: putting the round again, as a node's walker does after a
	// restart, heals both.)
	if sp, ok := s.(store.Sampler); ok {
		for r := range crashMaxRounds {
			v := crashValue(r, false)
			got, err := Population(ctx, sp, v.ProviderID, v.ContextID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("round %d: Sample after kill: %v", r, err)
			}
			put := crashMultihashes(r)
			var found []multihash.Multihash
			for _, mh := range put {
				if slices.ContainsFunc(mustGet(t, s, mh), func(x store.Value) bool { return x.SameContext(v) }) {
					found = append(found, mh)
				}
			}
			if len(without(found, got)) > 0 || len(without(got, put)) > 0 {
				t.Fatalf("round %d: the population after the kill has %d multihashes, Get finds the context on %d, %d of them outside the population; %d population entries were never put", r, len(got), len(found), len(without(found, got)), len(without(got, put)))
			}
			if _, removed, mayBeGone, _ := crashState(r, flushed); r <= flushed && !removed && !mayBeGone && len(got) != crashRoundSize {
				t.Fatalf("round %d was flushed, but its population has %d multihashes, want %d", r, len(got), crashRoundSize)
			}
		}
	}
	// Rounds after the last flush may be partly there; what is there must be
	// well-formed, and the store must take new writes.
	n := 0
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatalf("All after kill: %v", err)
		}
		for _, v := range e.Values {
			if v.ProviderID != PeerID("crash") || !strings.HasPrefix(string(v.ContextID), "ctx-") {
				t.Fatalf("corrupt value after kill: %s", fmtValues(e.Values))
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("All after kill yielded nothing")
	}
	fresh := value("after", "crash", "md")
	mustPut(t, s, fresh, Multihash("after-crash", 0))
	expectValues(t, s, Multihash("after-crash", 0), fresh)
	if sw, ok := s.(store.Sweeper); ok {
		if _, err := sw.Sweep(ctx); err != nil {
			t.Fatalf("Sweep after kill: %v", err)
		}
	}
}

// runPattern turns a test name such as "TestX/Persistent/Crash" into a -run
// pattern that matches exactly that test.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
