package codeindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
)

// searchAll runs every query on ix, and the results against Grep.
func sameAnswers(t *testing.T, what string, ix *Index, files []File, queries []string) {
	t.Helper()
	for _, q := range queries {
		got, trunc, err := ix.Search(q, 1<<30)
		if err != nil {
			t.Fatalf("%s: Search(%q): %v", what, q, err)
		}
		if want := Grep(files, q); !reflect.DeepEqual(got, want) || trunc {
			t.Fatalf("%s: Search(%q): %d matches, want %d", what, q, len(got), len(want))
		}
	}
}

// queriesOf cuts n queries from the text files, and adds some made up.
func queriesOf(rng *rand.Rand, files []File, n int) []string {
	qs := []string{"a", "ka", "zzz", "marker-", "()"}
	for len(qs) < n {
		f := files[rng.IntN(len(files))]
		if IsBinary(f.Data) || len(f.Data) < 2 {
			continue
		}
		a := rng.IntN(len(f.Data) - 1)
		q := string(f.Data[a : a+1+rng.IntN(min(14, len(f.Data)-a-1))])
		if CheckQuery(q) == nil {
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
	trees := [][]File{nil, smallTree}
	for i := range 5 {
		trees = append(trees, generated(rng, i, repogen.Sizes{Min: 1 << 10, Max: 64 << 10}))
	}
	for i, files := range trees {
		ix := New(files)
		b := Encode(ix, testCommit)
		got, commit, err := Decode(bytes.Clone(b))
		if err != nil {
			t.Fatalf("tree %d: %v", i, err)
		}
		if commit != testCommit || got.Size() != ix.Size() || got.sum != ix.sum || got.Files() != ix.Files() {
			t.Fatalf("tree %d: commit %s size %d sum %x files %d; want %s %d %x %d", i, commit, got.Size(), got.sum, got.Files(), testCommit, ix.Size(), ix.sum, ix.Files())
		}
		if len(files) > 0 {
			sameAnswers(t, fmt.Sprintf("tree %d, loaded", i), got, files, queriesOf(rng, files, 100))
		}
		if again := Encode(got, commit); !bytes.Equal(again, b) {
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
	ix := New(smallTree)
	good := Encode(ix, testCommit)
	for i := range good {
		for _, bit := range []byte{1, 0x80} {
			b := bytes.Clone(good)
			b[i] ^= bit
			if got, _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d ^ %#x: decode = %v, %v; want ErrCorrupt", i, bit, got != nil, err)
			}
		}
	}
	for n := range len(good) {
		if _, _, err := Decode(bytes.Clone(good[:n])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut to %d of %d bytes: %v, want ErrCorrupt", n, len(good), err)
		}
	}

	// Past the CRC: a flipped byte of a file's text is the checksum's to
	// catch (the on-load Verify).
	text := bytes.Index(good, []byte("hello world"))
	b := bytes.Clone(good)
	b[text] ^= 1
	if _, _, err := Decode(rewriteCRC(b)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a file's byte flipped, CRC rewritten: %v, want ErrCorrupt from the on-load check", err)
	}
	// Each field of the index, flipped past the CRC, is caught by a bounds
	// check, the size's recount or the checksum: never loaded, never a
	// panic.
	for i := len(snapshotMagic) + 4; i < len(good)-8; i++ {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		_, commit, err := Decode(rewriteCRC(b))
		if err == nil && commit != testCommit {
			continue // a byte of the commit: the file's name tells (TestSnapshotDir)
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d ^ 0x10, CRC rewritten: %v, want ErrCorrupt", i, err)
		}
	}

	// Another version is not read.
	b = bytes.Clone(good)
	binary.LittleEndian.PutUint32(b[len(snapshotMagic):], snapshotVersion+1)
	if _, _, err := Decode(rewriteCRC(b)); !errors.Is(err, ErrVersion) {
		t.Errorf("version %d: %v, want ErrVersion", snapshotVersion+1, err)
	}
}

// FuzzDecodeSnapshot: whatever the bytes, decoding returns an error or an
// index that verifies and encodes back to the same bytes; it never panics.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(Encode(New(smallTree), testCommit))
	f.Add(Encode(New(nil), testCommit))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		ix, commit, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrVersion", err)
			}
			return
		}
		if err := ix.Verify(); err != nil {
			t.Fatal(err)
		}
		if out := Encode(ix, commit); !bytes.Equal(out, in) {
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
	s := Dir(filepath.Join(dir, "snaps"))
	ix := New(smallTree)
	if _, err := s.Load("r", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("load before any store: %v, want fs.ErrNotExist", err)
	}
	for _, repo := range []string{"r", "a/b", "../up", "*", "x y?"} {
		if err := s.Store(repo, testCommit, ix); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(repo, testCommit)
		if err != nil {
			t.Fatalf("load %q: %v", repo, err)
		}
		sameAnswers(t, "loaded "+repo, got, smallTree, []string{"hello", "aaa", "ba", "straße"})
	}
	if up, _ := filepath.Glob(filepath.Join(dir, "*")); len(up) != 1 {
		t.Errorf("files beside the snapshot directory: %v", up)
	}
	if err := s.Store("r", "not-a-commit", ix); err == nil {
		t.Error("store at a commit that is no object name: no error")
	}

	next := "89abcdef0123456789abcdef0123456789abcdef"
	if err := s.Store("r", next, ix); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("r", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old commit's snapshot after a new one: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.Load("*", testCommit); err != nil {
		t.Errorf("another repo's snapshot went with r's old one: %v", err)
	}

	// A file under another commit's name is not that commit's.
	other := "fedcba9876543210fedcba9876543210fedcba98"
	if err := os.WriteFile(s.File("*", other), Encode(ix, testCommit), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("*", other); !errors.Is(err, ErrCorrupt) {
		t.Errorf("load of a snapshot of %s under the name of %s: %v, want ErrCorrupt", testCommit, other, err)
	}

	p := s.File("r", next)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 4
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("r", next); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("load of a flipped file: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the corrupted snapshot was kept: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(string(s), ".tmp-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}
