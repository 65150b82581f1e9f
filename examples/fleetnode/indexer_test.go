package fleetnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/lease"
)

func TestRepoIndexer(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	dir := t.TempDir()
	repos, err := repogen.Generate(ctx, dir, 2, repogen.Sizes{Min: 4 << 10, Max: 8 << 10}, 3)
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{repos[0].ID: repos[0].URL, repos[1].ID: repos[1].URL}
	work := t.TempDir()
	x := newRepoIndexer(work, func(_ context.Context, id string) (string, error) {
		if u, ok := urls[id]; ok {
			return u, nil
		}
		return "", fmt.Errorf("%w %s", errUnknownRepo, id)
	})
	r := repos[0]
	size, err := x.Index(ctx, lease.Row{Item: lease.Item{ID: r.ID, Commit: r.Commit}})
	if err != nil {
		t.Fatal(err)
	}
	ri := x.get(r.ID)
	if ri == nil || ri.Size() != size || ri.Commit != r.Commit {
		t.Fatalf("after Index: %+v, size %d", ri, size)
	}
	if est := codeindex.Estimate(indexFiles(r.Files)); float64(size) < 0.5*float64(est) || float64(size) > 2*float64(est) {
		t.Errorf("index size %d, the catalog estimated %d", size, est)
	}
	q := fmt.Sprintf("marker-%04d", 0)
	got, _, err := ri.Search(q, codeindex.MaxLimit)
	if err != nil || len(got) != 1 || got[0].Path != "README.md" {
		t.Errorf("Search(%q) = %v, %v", q, got, err)
	}
	if got, want := ri.Files(), len(r.Files)-1; got != want { // repo 0 has a binary file
		t.Errorf("indexed %d files, want %d", got, want)
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("clone directory left behind: %v", left)
	}

	// The catalog's commit is what is checked out: another repo's commit
	// is not in this one.
	if _, err := x.Index(ctx, lease.Row{Item: lease.Item{ID: r.ID, Commit: repos[1].Commit}}); err == nil {
		t.Error("Index at a commit the repo lacks: no error")
	}
	if _, err := x.Index(ctx, lease.Row{Item: lease.Item{ID: "nope", Commit: r.Commit}}); !errors.Is(err, errUnknownRepo) {
		t.Errorf("Index of an unknown repo: %v, want errUnknownRepo", err)
	}
	if _, err := x.Index(ctx, lease.Row{Item: lease.Item{ID: r.ID}}); err == nil {
		t.Error("Index without a commit: no error")
	}
	x.Drop(r.ID)
	if x.get(r.ID) != nil {
		t.Error("Drop left the index")
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("clone directories left behind after failures: %v", left)
	}
}

// A corrupted index found by verify is out at once (no query reaches
// it), reported, rebuilt from the repository at its commit, and serves
// again; an index the manager drops meanwhile is not brought back.
func TestRepoIndexerVerify(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repos, err := repogen.Generate(ctx, t.TempDir(), 2, repogen.Sizes{Min: 4 << 10, Max: 8 << 10}, 5)
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{repos[0].ID: repos[0].URL, repos[1].ID: repos[1].URL}
	var broken atomic.Bool
	x := newRepoIndexer(t.TempDir(), func(_ context.Context, id string) (string, error) {
		if broken.Load() {
			return "", fmt.Errorf("%w %s (the catalog is unreachable)", errUnknownRepo, id)
		}
		return urls[id], nil
	})
	for _, r := range repos {
		if _, err := x.Index(ctx, lease.Row{Item: lease.Item{ID: r.ID, Commit: r.Commit}}); err != nil {
			t.Fatal(err)
		}
	}
	none := func(item, commit string, err error) { t.Errorf("%s reported corrupt: %v", item, err) }
	fine := func(item string, err error) { t.Errorf("%s rebuilt: %v", item, err) }
	if n := x.verify(ctx, none, fine); n != 0 {
		t.Fatalf("verify of intact indexes found %d", n)
	}

	r := repos[0]
	corruptible(t, x, r.ID, r.Files)()
	old := x.get(r.ID)
	var reported, answered bool
	n := x.verify(ctx, func(item, commit string, err error) {
		reported = item == r.ID && commit == r.Commit && errors.Is(err, codeindex.ErrCorrupt)
		answered = x.get(r.ID) != nil // while it rebuilds
	}, func(item string, err error) {
		if err != nil {
			t.Errorf("rebuild of %s: %v", item, err)
		}
	})
	if n != 1 || !reported || answered {
		t.Fatalf("verify found %d corrupted, reported %v, the index still answered while rebuilt %v", n, reported, answered)
	}
	fresh := x.get(r.ID)
	if fresh == nil || fresh == old || fresh.Verify() != nil || fresh.Commit != r.Commit {
		t.Fatalf("after the rebuild: %+v", fresh)
	}
	q := fmt.Sprintf("marker-%04d", 0)
	if got, _, err := fresh.Search(q, codeindex.MaxLimit); err != nil || len(got) != 1 {
		t.Errorf("the rebuilt index: Search(%q) = %v, %v", q, got, err)
	}

	// A rebuild that fails leaves the item without an index and is tried
	// again at the next verify; one the manager drops meanwhile stays out.
	corruptible(t, x, repos[1].ID, repos[1].Files)()
	broken.Store(true)
	var failed bool
	if n := x.verify(ctx, func(string, string, error) {}, func(item string, err error) { failed = err != nil }); n != 1 || !failed || x.get(repos[1].ID) != nil {
		t.Fatalf("a failed rebuild: found %d, failed %v, index %v", n, failed, x.get(repos[1].ID))
	}
	broken.Store(false)
	if n := x.verify(ctx, none, func(item string, err error) { failed = err != nil }); n != 0 || failed || x.get(repos[1].ID) == nil {
		t.Fatalf("the retry: found %d, failed %v, index %v", n, failed, x.get(repos[1].ID))
	}
	corruptible(t, x, repos[1].ID, repos[1].Files)()
	broken.Store(true)
	x.verify(ctx, func(string, string, error) {}, func(string, error) {})
	x.Drop(repos[1].ID) // the manager lost the lease
	broken.Store(false)
	x.verify(ctx, none, func(string, error) {})
	if x.get(repos[1].ID) != nil {
		t.Fatal("an index the manager dropped was rebuilt and installed")
	}
}

// Indexers that share a snapshot directory, on real git: the first
// clones and indexes and writes the snapshot; another loads it without
// looking up a clone URL (no clone), and answers the same; with
// rehydrate off it clones. A snapshot with one byte flipped on disk is
// reported corrupt, never served, and replaced by a fresh build from git.
// A replica slot loads its repo's snapshot.
func TestRepoIndexerRehydrates(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repos, err := repogen.Generate(ctx, t.TempDir(), 1, repogen.Sizes{Min: 8 << 10, Max: 16 << 10}, 9)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	snapDir := t.TempDir()
	var lookups atomic.Int64
	type report struct {
		item    string
		loading bool
		err     error
	}
	var reports []report
	newIndexer := func(rehydrate bool) *repoIndexer {
		x := newRepoIndexer(t.TempDir(), func(_ context.Context, id string) (string, error) {
			lookups.Add(1)
			return r.URL, nil
		})
		x.snaps = ptrDir(snapDir)
		x.rehydrate.Store(rehydrate)
		x.snapshotErr = func(item string, loading bool, err error) { reports = append(reports, report{item, loading, err}) }
		return x
	}
	row := lease.Row{Item: lease.Item{ID: r.ID, Commit: r.Commit}}
	queries := append([]string{"marker-0000", "()", "a", "zz"}, repogen.Syllables...)

	first := newIndexer(true)
	if _, err := first.Index(ctx, row); err != nil {
		t.Fatal(err)
	}
	if ri := first.get(r.ID); ri.From != "git" || lookups.Load() != 1 {
		t.Fatalf("first build from %q after %d clone URL lookups, want git after 1", ri.From, lookups.Load())
	}
	sameAnswers(t, "built", first.get(r.ID).Index, r.Files, queries)

	second := newIndexer(true)
	size, err := second.Index(ctx, row)
	if err != nil {
		t.Fatal(err)
	}
	ri := second.get(r.ID)
	if ri.From != "snapshot" || lookups.Load() != 1 || size != first.get(r.ID).Size() || ri.Commit != r.Commit {
		t.Fatalf("second: from %q, %d lookups, size %d (built %d), commit %s", ri.From, lookups.Load(), size, first.get(r.ID).Size(), ri.Commit)
	}
	sameAnswers(t, "loaded", ri.Index, r.Files, queries)

	replica := lease.Row{Item: lease.Item{ID: lease.ReplicaID(r.ID, 1), Commit: r.Commit}}
	if _, err := second.Index(ctx, replica); err != nil || second.get(replica.ID).From != "snapshot" {
		t.Fatalf("replica slot: %v, from %q", err, second.get(replica.ID).From)
	}

	off := newIndexer(false)
	if _, err := off.Index(ctx, row); err != nil || off.get(r.ID).From != "git" || lookups.Load() != 2 {
		t.Fatalf("rehydrate off: %v, from %q, %d lookups", err, off.get(r.ID).From, lookups.Load())
	}

	// One byte of a file's text flipped on disk.
	p := codeindex.Dir(snapDir).File(r.ID, r.Commit)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("marker-"))
	b[at] ^= 0x20
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	third := newIndexer(true)
	if _, err := third.Index(ctx, row); err != nil {
		t.Fatal(err)
	}
	if ri := third.get(r.ID); ri.From != "git" || lookups.Load() != 3 {
		t.Fatalf("after the flip: from %q, %d lookups; want git, 3", ri.From, lookups.Load())
	}
	sameAnswers(t, "rebuilt after a corrupted snapshot", third.get(r.ID).Index, r.Files, queries)
	if len(reports) != 1 || !reports[0].loading || !errors.Is(reports[0].err, codeindex.ErrCorrupt) {
		t.Fatalf("reports %+v, want one corrupt load", reports)
	}
	// The build wrote a good snapshot in its place.
	fourth := newIndexer(true)
	if _, err := fourth.Index(ctx, row); err != nil || fourth.get(r.ID).From != "snapshot" {
		t.Fatalf("after the rebuild: %v, from %q", err, fourth.get(r.ID).From)
	}
}

// BenchmarkRehydrate times the two ways a node gets a repo's index: from
// git (fetch at depth 1, checkout, index, as on a win without a
// snapshot) and from the snapshot the first build wrote, in one run.
func BenchmarkRehydrate(b *testing.B) {
	needGit(b)
	ctx := context.Background()
	repos, err := repogen.Generate(ctx, b.TempDir(), 1, repogen.Sizes{Min: 64 << 10, Max: 64 << 10}, 11)
	if err != nil {
		b.Fatal(err)
	}
	r := repos[0]
	row := lease.Row{Item: lease.Item{ID: r.ID, Commit: r.Commit}}
	snapDir := b.TempDir()
	x := newRepoIndexer(b.TempDir(), func(context.Context, string) (string, error) { return r.URL, nil })
	x.snaps = ptrDir(snapDir)
	for _, mode := range []struct {
		name      string
		rehydrate bool
		from      string
	}{{"git", false, "git"}, {"snapshot", true, "snapshot"}} {
		b.Run(mode.name, func(b *testing.B) {
			x.rehydrate.Store(mode.rehydrate)
			for b.Loop() {
				if _, err := x.Index(ctx, row); err != nil {
					b.Fatal(err)
				}
			}
			if got := x.get(r.ID).From; got != mode.from {
				b.Fatalf("from %q, want %q", got, mode.from)
			}
			b.ReportMetric(float64(x.get(r.ID).Size())/(1<<10), "index-KiB")
		})
	}
}

// ptrDir is a snapshot directory for repoIndexer.snaps.
func ptrDir(path string) *codeindex.Dir {
	d := codeindex.Dir(path)
	return &d
}

// sameAnswers checks every query on ix against a scan of files
// (codeindex.Grep).
func sameAnswers(t *testing.T, what string, ix *codeindex.Index, files []repogen.File, queries []string) {
	t.Helper()
	for _, q := range queries {
		got, trunc, err := ix.Search(q, 1<<30)
		if want := codeindex.Grep(indexFiles(files), q); err != nil || trunc || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Search(%q): %d matches, %v, truncated %v; want %d", what, q, len(got), err, trunc, len(want))
		}
	}
}
