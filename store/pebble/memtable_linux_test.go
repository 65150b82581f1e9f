//go:build linux

package pebble_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	dskey "github.com/ipfs/go-datastore"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
)

// A store's write-ahead log is preallocated with what it holds, not to
// the memtable size: after two flushed writes a store with 64 KiB
// memtables, and one with the default 64 MiB memtable, each hold well
// under 1 MiB allocated (the default preallocated some 70 MiB before the
// growing preallocation). Sizes out of range are refused.
func TestWithMemTableSize(t *testing.T) {
	for _, n := range []uint64{0, pebble.MinMemTableSize - 1, 4 << 30} {
		if s, err := pebble.Open(t.TempDir(), pebble.WithMemTableSize(n)); err == nil {
			s.Close()
			t.Errorf("WithMemTableSize(%d) accepted", n)
		}
	}
	for _, tc := range []struct {
		name     string
		opts     []pebble.Option
		min, max uint64 // allocated bytes expected
	}{
		{"64KiB", []pebble.Option{pebble.WithMemTableSize(pebble.MinMemTableSize)}, 0, 1 << 20},
		{"default", nil, 0, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s, err := pebble.Open(dir, append(tc.opts, pebble.WithCacheSize(1<<20))...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			p := storetest.PeerID("p")
			for i := range 2 {
				v := store.Value{ProviderID: p, ContextID: fmt.Appendf(nil, "c%d", i), Metadata: []byte("m")}
				if err := s.Put(ctx, v, storetest.Multihashes(fmt.Sprint("mt", i), 50)...); err != nil {
					t.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			used := allocated(t, dir)
			t.Logf("%d bytes allocated", used)
			if used < tc.min || used > tc.max {
				t.Errorf("%d bytes allocated, want [%d, %d]", used, tc.min, tc.max)
			}
		})
	}
}

// A node's index and state, opened as examples/indexernode opens them
// (64 GiB budget, 32 MiB memtables and sorted runs for the index, every
// state write synced), hold a few MiB at most after a few thousand
// multihashes in small Puts, each flushed: the demo's indexers showed 140
// to 352 MiB, nearly all of it logs preallocated to the memtable size.
func TestSmallNodeDisk(t *testing.T) {
	const bound = 4 << 20
	ctx := context.Background()
	dir := t.TempDir()
	s, err := pebble.Open(filepath.Join(dir, "index"), pebble.WithCacheSize(1<<20), pebble.WithMemTableSize(32<<20),
		pebble.WithDiskBudget(64<<30), pebble.WithSortedRuns(32<<20), pebble.WithDigestPrefixKeys(), pebble.WithoutPopulations())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, err := pebble.OpenDatastore(filepath.Join(dir, "state"), 16<<30, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	p := storetest.PeerID("p")
	for i := range 50 {
		v := store.Value{ProviderID: p, ContextID: fmt.Appendf(nil, "c%d", i), Metadata: []byte("m")}
		if err := s.Put(ctx, v, storetest.Multihashes(fmt.Sprint("small", i), 100)...); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ds.Put(ctx, dskey.NewKey(fmt.Sprint("walk/", i)), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	used := allocated(t, dir)
	t.Logf("%d bytes allocated after 5,000 multihashes", used)
	if used > bound {
		t.Errorf("%d bytes allocated after 5,000 multihashes, want at most %d", used, bound)
	}
}

// allocated sums the bytes allocated on disk (stat blocks of 512 bytes) to
// the regular files under dir.
func allocated(t testing.TB, dir string) uint64 {
	t.Helper()
	var used uint64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted by Pebble meanwhile
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		used += uint64(info.Sys().(*syscall.Stat_t).Blocks) * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return used
}

// WithDiskBudget keeps what Pebble holds on disk, beyond what it stores,
// within the budget: a store of 512 KiB budget that holds a few hundred
// multihashes and rewrites the metadata of their contexts 3,000 times,
// flushing after each (as a frozen node does while it walks its
// publishers), stays under a third of the budget allocated. With the
// same memtable and DefaultOptions' four memtables queued before writes
// stall (so up to six logs) it reached 192 KiB.
func TestWithDiskBudget(t *testing.T) {
	const budget = 512 << 10
	if _, err := pebble.Open(t.TempDir(), pebble.WithDiskBudget(0)); err == nil {
		t.Error("WithDiskBudget(0) accepted")
	}
	ctx := context.Background()
	dir := t.TempDir()
	s, err := pebble.Open(dir, pebble.WithDiskBudget(budget), pebble.WithCacheSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := storetest.PeerID("p")
	for i := range 4 {
		v := store.Value{ProviderID: p, ContextID: fmt.Appendf(nil, "c%d", i), Metadata: []byte("m")}
		if err := s.Put(ctx, v, storetest.Multihashes(fmt.Sprint("budget", i), 100)...); err != nil {
			t.Fatal(err)
		}
	}
	var peak uint64
	for i := range 3000 {
		md := fmt.Appendf(nil, "metadata %d %s", i, make([]byte, 200))
		if err := s.UpdateMetadata(ctx, p, fmt.Appendf(nil, "c%d", i%4), md); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			peak = max(peak, allocated(t, dir))
		}
	}
	t.Logf("peak %d bytes allocated", peak)
	if peak > budget/3 {
		t.Errorf("%d bytes allocated, over a third of the %d budget", peak, budget)
	}
}
