package fleetnode

import (
	"bytes"
	"os/exec"
	"testing"

	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
)

// Every test closes its clients and stops its processes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func needGit(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		redistest.Unavailable(tb, "git not found: %v", err)
	}
}

// indexFiles are generated files as the index takes them.
func indexFiles(fs []repogen.File) []codeindex.File {
	out := make([]codeindex.File, len(fs))
	for i, f := range fs {
		out[i] = codeindex.File(f)
	}
	return out
}

// corruptible swaps item's index in x for one built from files (the same
// tree), whose bytes the test holds, and returns a function that flips a
// bit of one of them in memory: the index sees the change, as it would a
// bit flipped by faulty memory.
func corruptible(t *testing.T, x *repoIndexer, item string, files []repogen.File) (flip func()) {
	t.Helper()
	own := make([]codeindex.File, len(files))
	for i, f := range files {
		own[i] = codeindex.File{Path: f.Path, Data: bytes.Clone(f.Data)}
	}
	ix := codeindex.New(own)
	x.mu.Lock()
	ri := x.indexes[item]
	if ri == nil {
		x.mu.Unlock()
		t.Fatalf("no index of %s to swap", item)
	}
	swapped := *ri
	swapped.Index = ix
	x.indexes[item] = &swapped
	x.mu.Unlock()
	for _, f := range own {
		if len(f.Data) > 0 && !codeindex.IsBinary(f.Data) {
			return func() { f.Data[len(f.Data)/2] ^= 0x20 }
		}
	}
	t.Fatalf("%s has no text to flip", item)
	return nil
}
