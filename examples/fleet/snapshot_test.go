package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/lease"
)

// searchAll runs every query on ix, and the results against grepFiles.
func sameAnswers(t *testing.T, what string, ix *Index, files []sourceFile, queries []string) {
	t.Helper()
	for _, q := range queries {
		got, trunc, err := ix.Search(q, 1<<30)
		if err != nil {
			t.Fatalf("%s: Search(%q): %v", what, q, err)
		}
		if want := grepFiles(files, q); !reflect.DeepEqual(got, want) || trunc {
			t.Fatalf("%s: Search(%q): %d matches, want %d", what, q, len(got), len(want))
		}
	}
}

// queriesOf cuts n queries from the text files, and adds some made up.
func queriesOf(rng *rand.Rand, files []sourceFile, n int) []string {
	qs := []string{"a", "ka", "zzz", "marker-", "()"}
	for len(qs) < n {
		f := files[rng.IntN(len(files))]
		if isBinary(f.Data) || len(f.Data) < 2 {
			continue
		}
		a := rng.IntN(len(f.Data) - 1)
		q := string(f.Data[a : a+1+rng.IntN(min(14, len(f.Data)-a-1))])
		if checkQuery(q) == nil {
			qs = append(qs, q)
		}
	}
	return qs
}

const testCommit = "0123456789abcdef0123456789abcdef01234567"

// A snapshot decodes to an index that answers every query as the one
// written did (and as a brute-force scan does), with the same size and
// checksum, and encodes back to the same bytes.
func TestSnapshotRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	trees := [][]sourceFile{nil, smallTree}
	for i := range 5 {
		trees = append(trees, genFiles(rng, i, sizeRange{1 << 10, 64 << 10}))
	}
	for i, files := range trees {
		ix := newIndex(files)
		b := encodeSnapshot(ix, testCommit)
		got, commit, err := decodeSnapshot(bytes.Clone(b))
		if err != nil {
			t.Fatalf("tree %d: %v", i, err)
		}
		if commit != testCommit || got.Size() != ix.Size() || got.sum != ix.sum || got.Files() != ix.Files() {
			t.Fatalf("tree %d: commit %s size %d sum %x files %d; want %s %d %x %d", i, commit, got.Size(), got.sum, got.Files(), testCommit, ix.Size(), ix.sum, ix.Files())
		}
		if len(files) > 0 {
			sameAnswers(t, fmt.Sprintf("tree %d, loaded", i), got, files, queriesOf(rng, files, 100))
		}
		if again := encodeSnapshot(got, commit); !bytes.Equal(again, b) {
			t.Fatalf("tree %d: the loaded index encodes to other bytes", i)
		}
	}
}

// rewriteCRC puts the right CRC-64 at the end of a snapshot whose body
// was changed, so that only the decoder's own checks can catch it.
func rewriteCRC(b []byte) []byte {
	binary.LittleEndian.PutUint64(b[len(b)-8:], crc64.Checksum(b[:len(b)-8], crcTable))
	return b
}

// One byte flipped anywhere in a snapshot, or a snapshot cut short, never
// loads: the file's CRC catches it. With the CRC made right again, the
// on-load checks still do: a reference out of bounds, or the checksum the
// index had when it was built.
func TestSnapshotCorruption(t *testing.T) {
	ix := newIndex(smallTree)
	good := encodeSnapshot(ix, testCommit)
	for i := range good {
		for _, bit := range []byte{1, 0x80} {
			b := bytes.Clone(good)
			b[i] ^= bit
			if got, _, err := decodeSnapshot(b); !errors.Is(err, errCorrupt) {
				t.Fatalf("byte %d ^ %#x: decode = %v, %v; want errCorrupt", i, bit, got != nil, err)
			}
		}
	}
	for n := range len(good) {
		if _, _, err := decodeSnapshot(bytes.Clone(good[:n])); !errors.Is(err, errCorrupt) {
			t.Fatalf("cut to %d of %d bytes: %v, want errCorrupt", n, len(good), err)
		}
	}

	// Past the CRC: a flipped byte of a file's text is the checksum's to
	// catch (the on-load Verify).
	text := bytes.Index(good, []byte("hello world"))
	b := bytes.Clone(good)
	b[text] ^= 1
	if _, _, err := decodeSnapshot(rewriteCRC(b)); !errors.Is(err, errCorrupt) {
		t.Errorf("a file's byte flipped, CRC rewritten: %v, want errCorrupt from the on-load check", err)
	}
	// Each field of the index, flipped past the CRC, is caught by a bounds
	// check, the size's recount or the checksum: never loaded, never a
	// panic.
	for i := len(snapshotMagic) + 4; i < len(good)-8; i++ {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		_, commit, err := decodeSnapshot(rewriteCRC(b))
		if err == nil && commit != testCommit {
			continue // a byte of the commit: the file's name tells (TestSnapshotDir)
		}
		if !errors.Is(err, errCorrupt) {
			t.Fatalf("byte %d ^ 0x10, CRC rewritten: %v, want errCorrupt", i, err)
		}
	}

	// Another version is not read.
	b = bytes.Clone(good)
	binary.LittleEndian.PutUint32(b[len(snapshotMagic):], snapshotVersion+1)
	if _, _, err := decodeSnapshot(rewriteCRC(b)); !errors.Is(err, errSnapshotVersion) {
		t.Errorf("version %d: %v, want errSnapshotVersion", snapshotVersion+1, err)
	}
}

// FuzzDecodeSnapshot: whatever the bytes, decoding returns an error or an
// index that verifies and encodes back to the same bytes; it never panics.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encodeSnapshot(newIndex(smallTree), testCommit))
	f.Add(encodeSnapshot(newIndex(nil), testCommit))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		ix, commit, err := decodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) && !errors.Is(err, errSnapshotVersion) {
				t.Fatalf("error %v wraps neither errCorrupt nor errSnapshotVersion", err)
			}
			return
		}
		if err := ix.Verify(); err != nil {
			t.Fatal(err)
		}
		if out := encodeSnapshot(ix, commit); !bytes.Equal(out, in) {
			t.Fatalf("decoded %d bytes, encodes back to %d other bytes", len(in), len(out))
		}
		// Every search stays inside the index.
		for _, q := range []string{"a", "hello", "zz", "ab"} {
			if _, _, err := ix.Search(q, 10); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The snapshot directory: a store then a load gives the same index; a
// missing one is fs.ErrNotExist; a corrupted file is reported and
// removed; a new commit replaces the repo's old snapshot; repo names that
// are not file names stay inside the directory.
func TestSnapshotDir(t *testing.T) {
	dir := t.TempDir()
	s := snapshots{dir: filepath.Join(dir, "snaps")}
	ix := newIndex(smallTree)
	if _, err := s.load("r", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("load before any store: %v, want fs.ErrNotExist", err)
	}
	for _, repo := range []string{"r", "a/b", "../up", "*", "x y?"} {
		if err := s.store(repo, testCommit, ix); err != nil {
			t.Fatal(err)
		}
		got, err := s.load(repo, testCommit)
		if err != nil {
			t.Fatalf("load %q: %v", repo, err)
		}
		sameAnswers(t, "loaded "+repo, got, smallTree, []string{"hello", "aaa", "ba", "straße"})
	}
	if up, _ := filepath.Glob(filepath.Join(dir, "*")); len(up) != 1 {
		t.Errorf("files beside the snapshot directory: %v", up)
	}
	if err := s.store("r", "not-a-commit", ix); err == nil {
		t.Error("store at a commit that is no object name: no error")
	}

	next := "89abcdef0123456789abcdef0123456789abcdef"
	if err := s.store("r", next, ix); err != nil {
		t.Fatal(err)
	}
	if _, err := s.load("r", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old commit's snapshot after a new one: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.load("*", testCommit); err != nil {
		t.Errorf("another repo's snapshot went with r's old one: %v", err)
	}

	// A file under another commit's name is not that commit's.
	other := "fedcba9876543210fedcba9876543210fedcba98"
	if err := os.WriteFile(s.path("*", other), encodeSnapshot(ix, testCommit), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.load("*", other); !errors.Is(err, errCorrupt) {
		t.Errorf("load of a snapshot of %s under the name of %s: %v, want errCorrupt", testCommit, other, err)
	}

	p := s.path("r", next)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 4
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.load("r", next); !errors.Is(err, errCorrupt) {
		t.Fatalf("load of a flipped file: %v, want errCorrupt", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the corrupted snapshot was kept: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(s.dir, ".tmp-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
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
	repos, err := generateRepos(ctx, t.TempDir(), 1, sizeRange{8 << 10, 16 << 10}, 9)
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
		x.snaps = &snapshots{dir: snapDir}
		x.rehydrate.Store(rehydrate)
		x.snapshotErr = func(item string, loading bool, err error) { reports = append(reports, report{item, loading, err}) }
		return x
	}
	row := lease.Row{Item: lease.Item{ID: r.ID, Commit: r.Commit}}
	queries := queriesOf(rand.New(rand.NewPCG(1, 1)), r.Files, 60)

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
	p := (&snapshots{dir: snapDir}).path(r.ID, r.Commit)
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
	if len(reports) != 1 || !reports[0].loading || !errors.Is(reports[0].err, errCorrupt) {
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
	repos, err := generateRepos(ctx, b.TempDir(), 1, sizeRange{64 << 10, 64 << 10}, 11)
	if err != nil {
		b.Fatal(err)
	}
	r := repos[0]
	row := lease.Row{Item: lease.Item{ID: r.ID, Commit: r.Commit}}
	snapDir := b.TempDir()
	x := newRepoIndexer(b.TempDir(), func(context.Context, string) (string, error) { return r.URL, nil })
	x.snaps = &snapshots{dir: snapDir}
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
