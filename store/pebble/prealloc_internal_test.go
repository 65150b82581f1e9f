package pebble

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// fakeFile records what is preallocated of it.
type fakeFile struct {
	vfs.File
	allocated []int64 // ends preallocated, in order
}

func (f *fakeFile) Write(p []byte) (int, error) { return len(p), nil }

func (f *fakeFile) Preallocate(offset, length int64) error {
	if n := len(f.allocated); n > 0 && offset != f.allocated[n-1] || n == 0 && offset != 0 {
		panic("preallocation not contiguous")
	}
	f.allocated = append(f.allocated, offset+length)
	return nil
}

// A log's preallocation grows with what is written, by doubling, up to
// what Pebble asked and never past it: a log that holds 10 KiB takes
// minPrealloc, one that fills reaches the 70 MiB Pebble asks for a 64 MiB
// memtable in a few steps.
func TestGrowingPreallocation(t *testing.T) {
	const want = 70 << 20
	fake := &fakeFile{}
	f := &growingFile{File: fake}
	f.Write(make([]byte, 10<<10))
	if err := f.Preallocate(0, want); err != nil { // as Pebble does after the first write
		t.Fatal(err)
	}
	if len(fake.allocated) != 1 || fake.allocated[0] != minPrealloc {
		t.Fatalf("after 10 KiB written: preallocated to %v, want [%d]", fake.allocated, minPrealloc)
	}
	chunk := make([]byte, 64<<10)
	for range want / len(chunk) {
		f.Write(chunk)
		if top := fake.allocated[len(fake.allocated)-1]; top < min(f.written, want) {
			t.Fatalf("%d bytes written, preallocated only to %d", f.written, top)
		}
	}
	if top := fake.allocated[len(fake.allocated)-1]; top != want || len(fake.allocated) > 12 {
		t.Fatalf("a full log preallocated to %v, want %d in at most 12 steps", fake.allocated, want)
	}
}
