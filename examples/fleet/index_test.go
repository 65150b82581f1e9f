package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/crc64"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/indexkit/indexkit/lease"
)

var smallTree = []sourceFile{
	{Path: "a.txt", Data: []byte("hello world\nfoo bar baz\nhello again\n")},
	{Path: "dir/b.go", Data: []byte("package b\n\nfunc Hello() {}")},
	{Path: "overlap.txt", Data: []byte("aaaa\naaa\naa\nbaaab\n")},
	{Path: "bin.dat", Data: []byte("hello\x00 binary hello\n")},
	{Path: "empty", Data: nil},
	{Path: "unicode.md", Data: []byte("größe straße\nnaïve café\n")},
}

func TestSearch(t *testing.T) {
	ix := newIndex(smallTree)
	if got, want := ix.Files(), 5; got != want {
		t.Fatalf("Files() = %d, want %d (the binary file skipped)", got, want)
	}
	m := func(path string, line int, text string) Match { return Match{Path: path, Line: line, Text: text} }
	for _, tc := range []struct {
		q     string
		limit int
		want  []Match
		trunc bool
	}{
		{"hello", 0, []Match{m("a.txt", 1, "hello world"), m("a.txt", 3, "hello again")}, false},
		{"Hello", 0, []Match{m("dir/b.go", 3, "func Hello() {}")}, false},
		{"hello", 1, []Match{m("a.txt", 1, "hello world")}, true},
		// Short queries scan.
		{"ba", 0, []Match{m("a.txt", 2, "foo bar baz"), m("overlap.txt", 4, "baaab")}, false},
		{"{", 0, []Match{m("dir/b.go", 3, "func Hello() {}")}, false},
		{"aa", 2, []Match{m("overlap.txt", 1, "aaaa"), m("overlap.txt", 2, "aaa")}, true},
		// Overlapping occurrences: one match per line.
		{"aaa", 0, []Match{m("overlap.txt", 1, "aaaa"), m("overlap.txt", 2, "aaa"), m("overlap.txt", 4, "baaab")}, false},
		{"aaaa", 0, []Match{m("overlap.txt", 1, "aaaa")}, false},
		// Every trigram is in the line, the substring is not.
		{"foo baz", 0, nil, false},
		{"zzz", 0, nil, false},
		// Only in the binary file.
		{"binary", 0, nil, false},
		// Multi-byte UTF-8.
		{"straße", 0, []Match{m("unicode.md", 1, "größe straße")}, false},
		{"ï", 0, []Match{m("unicode.md", 2, "naïve café")}, false},
		// Spanning files or lines never matches.
		{"again", 0, []Match{m("a.txt", 3, "hello again")}, false},
	} {
		got, trunc, err := ix.Search(tc.q, tc.limit)
		if err != nil {
			t.Fatalf("Search(%q): %v", tc.q, err)
		}
		if !reflect.DeepEqual(got, tc.want) || trunc != tc.trunc {
			t.Errorf("Search(%q, %d) = %v, %v; want %v, %v", tc.q, tc.limit, got, trunc, tc.want, tc.trunc)
		}
	}
	for _, q := range []string{"", "a\nb", "x\r", strings.Repeat("x", maxQueryLen+1)} {
		if _, _, err := ix.Search(q, 0); !errors.Is(err, errBadQuery) {
			t.Errorf("Search(%.20q) error = %v, want errBadQuery", q, err)
		}
	}
}

// TestSearchMatchesGrep compares the index with a brute-force scan over
// generated repos, for queries cut from the text and made up.
func TestSearchMatchesGrep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 10 {
		files := genFiles(rng, i, sizeRange{1 << 10, 32 << 10})
		ix := newIndex(files)
		for range 200 {
			var q string
			if rng.IntN(3) == 0 {
				q = syllables[rng.IntN(len(syllables))] + syllables[rng.IntN(len(syllables))][:1]
			} else {
				f := files[rng.IntN(len(files))]
				if isBinary(f.Data) || len(f.Data) < 2 {
					continue
				}
				a := rng.IntN(len(f.Data) - 1)
				q = string(f.Data[a : a+1+rng.IntN(min(14, len(f.Data)-a-1))])
			}
			if checkQuery(q) != nil {
				continue
			}
			got, trunc, err := ix.Search(q, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			if want := grepFiles(files, q); !reflect.DeepEqual(got, want) || trunc {
				t.Fatalf("repo %d, Search(%q): %d matches, want %d\ngot  %v\nwant %v", i, q, len(got), len(want), got, want)
			}
		}
	}
}

// TestIndexSize checks the accounting against an independent count, and
// against the heap the index really takes.
func TestIndexSize(t *testing.T) {
	ix := newIndex(smallTree)
	var want int64
	postings, grams := 0, map[string]bool{}
	for _, f := range smallTree {
		if isBinary(f.Data) {
			continue
		}
		want += fileCost + int64(len(f.Path)+len(f.Data))
		if len(f.Data) == 0 {
			continue
		}
		for line := range strings.SplitSeq(strings.TrimSuffix(string(f.Data), "\n"), "\n") {
			want += lineCost
			inLine := map[string]bool{}
			for i := 0; i+3 <= len(line); i++ {
				inLine[line[i:i+3]], grams[line[i:i+3]] = true, true
			}
			postings += len(inLine)
		}
	}
	want += 4*int64(postings) + gramEntryCost*int64(len(grams))
	if got := ix.Size(); got != want {
		t.Errorf("Size() = %d, want %d", got, want)
	}

	// A bigger tree, measured on the heap: the accounting is meant to be
	// an estimate of the same order, not exact. The file contents, which
	// the index keeps, are allocated within the measurement.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var files []sourceFile
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 4 {
		files = append(files, genFiles(rng, i+1, sizeRange{256 << 10, 256 << 10})...)
	}
	big := newIndex(files)
	files = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	ratio := float64(big.Size()) / float64(heap)
	t.Logf("accounted %d bytes, heap grew %d bytes (ratio %.2f)", big.Size(), heap, ratio)
	if ratio < 0.5 || ratio > 2 {
		t.Errorf("accounted size %d is far from the heap growth %d (ratio %.2f)", big.Size(), heap, ratio)
	}
	runtime.KeepAlive(big)

	// More text, more bytes.
	if a, b := newIndex(smallTree[:1]).Size(), newIndex(smallTree[:2]).Size(); a >= b {
		t.Errorf("Size of 1 file %d ≥ size of 2 files %d", a, b)
	}
}

func TestRepoIndexer(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	dir := t.TempDir()
	repos, err := generateRepos(ctx, dir, 2, sizeRange{4 << 10, 8 << 10}, 3)
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
	if est := r.Estimate(); float64(size) < 0.5*float64(est) || float64(size) > 2*float64(est) {
		t.Errorf("index size %d, the catalog estimated %d", size, est)
	}
	q := fmt.Sprintf("marker-%04d", 0)
	got, _, err := ri.Search(q, maxLimit)
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

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"123": 123, "2KiB": 2048, "3MiB": 3 << 20, "1GiB": 1 << 30, "5B": 5} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1TB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q): no error", in)
		}
	}
}

func Example_search() {
	ix := newIndex([]sourceFile{
		{Path: "main.go", Data: []byte("package main\n\nfunc main() {\n\tprintln(\"hello, fleet\")\n}\n")},
		{Path: "README.md", Data: []byte("# hello\nA fleet of nodes.\n")},
	})
	for _, q := range []string{"fleet", "he"} {
		ms, _, _ := ix.Search(q, 10)
		for _, m := range ms {
			fmt.Printf("%s\t%s:%d: %s\n", q, m.Path, m.Line, strings.TrimSpace(m.Text))
		}
	}
	// Output:
	// fleet	README.md:2: A fleet of nodes.
	// fleet	main.go:4: println("hello, fleet")
	// he	README.md:1: # hello
	// he	main.go:4: println("hello, fleet")
}

// TestHelp: `fleet <cmd> -h` prints the command's usage and what it does,
// and is no error but flag.ErrHelp (exit status 0).
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"node", "demo", "sim", "set"} {
		var out bytes.Buffer
		if err := run(t.Context(), []string{cmd, "-h"}, &out); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("fleet %s -h: %v, want flag.ErrHelp", cmd, err)
		}
		want := "usage: fleet " + cmd + " [flags]\n" + descriptions[cmd] + ". Flags:\n"
		if descriptions[cmd] == "" || !strings.HasPrefix(out.String(), want) {
			t.Errorf("fleet %s -h prints %q..., want %q first", cmd, out.String()[:min(len(out.String()), 120)], want)
		}
	}
}

// Verify finds one byte changed anywhere a search reads: a file's text,
// a line record, a posting list, or where a trigram's list lies; and
// nothing when the byte is put back.
func TestIndexVerify(t *testing.T) {
	ix := newIndex(smallTree)
	if err := ix.Verify(); err != nil {
		t.Fatalf("a fresh index: %v", err)
	}
	flip := func(what string, b *byte) {
		t.Helper()
		*b ^= 0x20
		if err := ix.Verify(); !errors.Is(err, errCorrupt) {
			t.Errorf("%s changed: Verify = %v, want errCorrupt", what, err)
		}
		*b ^= 0x20
		if err := ix.Verify(); err != nil {
			t.Errorf("%s put back: %v", what, err)
		}
	}
	flip("a file's byte", &ix.files[0].data[3])
	ix.files[1].path = strings.Clone(ix.files[1].path) // a literal's bytes are read-only
	flip("a path's byte", unsafe.StringData(ix.files[1].path))
	flip("a line record", (*byte)(unsafe.Pointer(&ix.lines[2].end)))
	flip("a posting", (*byte)(unsafe.Pointer(&ix.postings[len(ix.postings)/2])))
	// Two trigrams' lists swapped: every byte is where it was.
	var a, b uint32
	for g, p := range ix.grams {
		if a == 0 {
			a = g
		} else if len(p) != len(ix.grams[a]) || &p[0] != &ix.grams[a][0] {
			b = g
			break
		}
	}
	ix.grams[a], ix.grams[b] = ix.grams[b], ix.grams[a]
	if err := ix.Verify(); !errors.Is(err, errCorrupt) {
		t.Errorf("two posting lists swapped: Verify = %v, want errCorrupt", err)
	}
}

// A corrupted index found by verify is out at once (no query reaches
// it), reported, rebuilt from the repository at its commit, and serves
// again; an index the manager drops meanwhile is not brought back.
func TestRepoIndexerVerify(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repos, err := generateRepos(ctx, t.TempDir(), 2, sizeRange{4 << 10, 8 << 10}, 5)
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
	old := x.get(r.ID)
	old.files[0].data[0] ^= 1
	var reported, answered bool
	n := x.verify(ctx, func(item, commit string, err error) {
		reported = item == r.ID && commit == r.Commit && errors.Is(err, errCorrupt)
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
	if got, _, err := fresh.Search(q, maxLimit); err != nil || len(got) != 1 {
		t.Errorf("the rebuilt index: Search(%q) = %v, %v", q, got, err)
	}

	// A rebuild that fails leaves the item without an index and is tried
	// again at the next verify; one the manager drops meanwhile stays out.
	x.get(repos[1].ID).files[0].data[0] ^= 1
	broken.Store(true)
	var failed bool
	if n := x.verify(ctx, func(string, string, error) {}, func(item string, err error) { failed = err != nil }); n != 1 || !failed || x.get(repos[1].ID) != nil {
		t.Fatalf("a failed rebuild: found %d, failed %v, index %v", n, failed, x.get(repos[1].ID))
	}
	broken.Store(false)
	if n := x.verify(ctx, none, func(item string, err error) { failed = err != nil }); n != 0 || failed || x.get(repos[1].ID) == nil {
		t.Fatalf("the retry: found %d, failed %v, index %v", n, failed, x.get(repos[1].ID))
	}
	x.get(repos[1].ID).files[0].data[0] ^= 1
	broken.Store(true)
	x.verify(ctx, func(string, string, error) {}, func(string, error) {})
	x.Drop(repos[1].ID) // the manager lost the lease
	broken.Store(false)
	x.verify(ctx, none, func(string, error) {})
	if x.get(repos[1].ID) != nil {
		t.Fatal("an index the manager dropped was rebuilt and installed")
	}
}

// BenchmarkIndexVerify times the integrity check of an index of about
// 4 MiB of text, beside the baseline of one CRC-64 pass over the bytes
// the index holds (its files, line records and postings) in the same run.
func BenchmarkIndexVerify(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ix := newIndex(genFiles(rng, 1, sizeRange{4 << 20, 4 << 20}))
	var raw []byte
	for _, f := range ix.files {
		raw = append(raw, f.data...)
	}
	raw = append(raw, make([]byte, 16*len(ix.lines)+4*len(ix.postings))...)
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if err := ix.Verify(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("crc64-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			crc64.Checksum(raw, crcTable)
		}
	})
	b.Logf("index of %d MiB (Size), %d MiB checked", ix.Size()>>20, len(raw)>>20)
}
