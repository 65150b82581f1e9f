//go:build linux

package freeze_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/indexkit/indexkit/freeze"
)

// Budget counts the bytes allocated on disk, not apparent sizes: a file
// preallocated far beyond its length (as Pebble preallocates its WAL)
// counts the whole preallocation, and a sparse file of 100 MB with nothing
// written counts next to nothing.
func TestBudgetCountsAllocatedBytes(t *testing.T) {
	t.Run("preallocated", func(t *testing.T) {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "000001.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		const prealloc = 8 << 20
		// FALLOC_FL_KEEP_SIZE: allocate without growing the apparent size.
		if err := syscall.Fallocate(int(f.Fd()), 1, 0, prealloc); err != nil {
			if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
				t.Skipf("fallocate: %v", err)
			}
			t.Fatal(err)
		}
		if fi, err := f.Stat(); err != nil || fi.Size() != 5 {
			t.Fatalf("apparent size %v, %v; want 5", fi.Size(), err)
		}
		used, total, err := freeze.Budget(dir, 1<<20).Usage(dir)
		if err != nil || total != 1<<20 {
			t.Fatalf("Usage = %d, %d, %v", used, total, err)
		}
		if used < prealloc {
			t.Errorf("used = %d bytes; want at least the %d preallocated", used, prealloc)
		}
	})
	t.Run("sparse", func(t *testing.T) {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "sparse"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(100 << 20); err != nil {
			t.Fatal(err)
		}
		used, _, err := freeze.Budget(dir, 1<<20).Usage(dir)
		if err != nil {
			t.Fatal(err)
		}
		if used > 64<<10 {
			t.Errorf("used = %d bytes for a sparse file with nothing written; want about 0", used)
		}
	})
}
