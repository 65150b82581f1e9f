package codeindex

import (
	"errors"
	"hash/crc64"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
)

var smallTree = []File{
	{Path: "a.txt", Data: []byte("hello world\nfoo bar baz\nhello again\n")},
	{Path: "dir/b.go", Data: []byte("package b\n\nfunc Hello() {}")},
	{Path: "overlap.txt", Data: []byte("aaaa\naaa\naa\nbaaab\n")},
	{Path: "bin.dat", Data: []byte("hello\x00 binary hello\n")},
	{Path: "empty", Data: nil},
	{Path: "unicode.md", Data: []byte("größe straße\nnaïve café\n")},
}

func TestSearch(t *testing.T) {
	ix := New(smallTree)
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
	for _, q := range []string{"", "a\nb", "x\r", strings.Repeat("x", MaxQueryLen+1)} {
		if _, _, err := ix.Search(q, 0); !errors.Is(err, ErrBadQuery) {
			t.Errorf("Search(%.20q) error = %v, want ErrBadQuery", q, err)
		}
	}
}

// TestSearchMatchesGrep compares the index with a brute-force scan over
// generated repos, for queries cut from the text and made up.
func TestSearchMatchesGrep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 10 {
		files := generated(rng, i, repogen.Sizes{Min: 1 << 10, Max: 32 << 10})
		ix := New(files)
		for range 200 {
			var q string
			if rng.IntN(3) == 0 {
				q = repogen.Syllables[rng.IntN(len(repogen.Syllables))] + repogen.Syllables[rng.IntN(len(repogen.Syllables))][:1]
			} else {
				f := files[rng.IntN(len(files))]
				if IsBinary(f.Data) || len(f.Data) < 2 {
					continue
				}
				a := rng.IntN(len(f.Data) - 1)
				q = string(f.Data[a : a+1+rng.IntN(min(14, len(f.Data)-a-1))])
			}
			if CheckQuery(q) != nil {
				continue
			}
			got, trunc, err := ix.Search(q, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			if want := Grep(files, q); !reflect.DeepEqual(got, want) || trunc {
				t.Fatalf("repo %d, Search(%q): %d matches, want %d\ngot  %v\nwant %v", i, q, len(got), len(want), got, want)
			}
		}
	}
}

// TestIndexSize checks the accounting against an independent count, and
// against the heap the index really takes.
func TestIndexSize(t *testing.T) {
	ix := New(smallTree)
	var want int64
	postings, grams := 0, map[string]bool{}
	for _, f := range smallTree {
		if IsBinary(f.Data) {
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
	var files []File
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 4 {
		files = append(files, generated(rng, i+1, repogen.Sizes{Min: 256 << 10, Max: 256 << 10})...)
	}
	big := New(files)
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
	if a, b := New(smallTree[:1]).Size(), New(smallTree[:2]).Size(); a >= b {
		t.Errorf("Size of 1 file %d ≥ size of 2 files %d", a, b)
	}
}

// Verify finds one byte changed anywhere a search reads: a file's text,
// a line record, a posting list, or where a trigram's list lies; and
// nothing when the byte is put back.
func TestIndexVerify(t *testing.T) {
	ix := New(smallTree)
	if err := ix.Verify(); err != nil {
		t.Fatalf("a fresh index: %v", err)
	}
	flip := func(what string, b *byte) {
		t.Helper()
		*b ^= 0x20
		if err := ix.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s changed: Verify = %v, want ErrCorrupt", what, err)
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
	if err := ix.Verify(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("two posting lists swapped: Verify = %v, want ErrCorrupt", err)
	}
}

// BenchmarkIndexVerify times the integrity check of an index of about
// 4 MiB of text, beside the baseline of one CRC-64 pass over the bytes
// the index holds (its files, line records and postings) in the same run.
func BenchmarkIndexVerify(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ix := New(generated(rng, 1, repogen.Sizes{Min: 4 << 20, Max: 4 << 20}))
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

// generated returns the files of repo i as repogen makes them.
func generated(rng *rand.Rand, i int, sizes repogen.Sizes) []File {
	var out []File
	for _, f := range repogen.Files(rng, i, sizes) {
		out = append(out, File(f))
	}
	return out
}
