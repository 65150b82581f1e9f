//go:build linux

package freeze_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/freeze"
)

// On a real 4 MiB tmpfs filled by the test, the default statfs reader and
// Run freeze the node before the filesystem is full, and what was written
// stays readable (and a little more can still be written).
//
// The writer plays the node: it writes 64 KiB files while not frozen, and
// after each one waits until Run has finished a check begun after the
// write, so the outcome does not depend on scheduling.
func TestTmpfsFreezesBeforeFull(t *testing.T) {
	base := t.TempDir()
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=4m"); err != nil {
		if os.Getenv("CI") != "" { // CI runs as root: the mount must work there
			t.Fatalf("cannot mount a 4 MiB tmpfs at %s: %v", mnt, err)
		}
		t.Skipf("skipped: cannot mount a 4 MiB tmpfs at %s (needs root or CAP_SYS_ADMIN): %v", mnt, err)
	}
	t.Cleanup(func() { // runs before t.TempDir's removal
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	values := filepath.Join(mnt, "values") // same device as mnt: read once
	if err := os.Mkdir(values, 0o755); err != nil {
		t.Fatal(err)
	}

	var checks atomic.Int64
	mon := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{values, mnt},
		freeze.WithPollIntervals(time.Millisecond, 5*time.Millisecond),
		freeze.WithRetryInterval(time.Millisecond),
		freeze.WithOnCheck(func(float64, error) { checks.Add(1) })))
	var freeAtFreeze atomic.Uint64
	f := must[*freeze.Freezer](t)(freeze.Open(context.Background(),
		freeze.FileStore(filepath.Join(base, "freeze.json")), mon,
		freeze.WithOnFreeze(func(context.Context, time.Time) error {
			used, total, err := (freeze.StatfsReader{}).Usage(mnt)
			freeAtFreeze.Store(total - used)
			return err
		})))
	stop := run(t, f)

	const fileSize = 64 << 10
	content := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, fileSize) }
	n := 0
	for ; !f.Frozen(); n++ {
		if n*fileSize > 4<<20 {
			t.Fatalf("wrote %d files (%d KiB) without a freeze", n, n*fileSize>>10)
		}
		if err := os.WriteFile(filepath.Join(values, fmt.Sprint(n)), content(n), 0o644); err != nil {
			t.Fatalf("write %d before the freeze (usage %.1f%%): %v", n, mon.Usage(), err)
		}
		c := checks.Load()
		deadline := time.Now().Add(10 * time.Second)
		for checks.Load() < c+2 { // the check after c+1 starts once c+1 has acted
			if time.Now().After(deadline) {
				t.Fatal("Run made no check in 10s")
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s := f.Status()
	t.Logf("frozen after %d files of 64 KiB: usage %.2f%%, %d KiB free at the freeze", n, s.Usage, freeAtFreeze.Load()>>10)
	if f.State() != freeze.Frozen || s.Usage < 90 || s.Usage >= 100 {
		t.Errorf("status %+v, want frozen between 90%% and 100%%", s)
	}
	if freeAtFreeze.Load() < fileSize {
		t.Errorf("only %d bytes free at the freeze", freeAtFreeze.Load())
	}
	// Still usable: everything reads back, and a small write still fits.
	for i := range n {
		b, err := os.ReadFile(filepath.Join(values, fmt.Sprint(i)))
		if err != nil || !bytes.Equal(b, content(i)) {
			t.Fatalf("file %d after the freeze: %d bytes, %v", i, len(b), err)
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, "after-freeze"), content(0), 0o644); err != nil {
		t.Errorf("a 64 KiB write after the freeze: %v", err)
	}
}
