package indexernode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/freeze"
)

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyFile)
	k1, err := loadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v", fi, err)
	}
	k2, err := loadOrCreateKey(path)
	if err != nil || !k1.Equals(k2) {
		t.Fatalf("reloaded key differs: %v", err)
	}
}

// The index's memory settings are checked before anything opens: a
// memtable Pebble cannot use and a negative cache are refused by name.
func TestIndexMemoryConfig(t *testing.T) {
	for _, tc := range []struct {
		cache, memtable, runs int64
		want                  string
	}{
		{-1, 0, 0, "IndexCacheSize"},
		{0, 1000, 0, "IndexMemTableSize"},
		{0, 4 << 30, 0, "IndexMemTableSize"},
		{0, 0, -1, "IndexRunSize"},
		{0, 0, 4096, "IndexRunSize"},
		{0, 0, 3 << 30, "IndexRunSize"},
	} {
		c := DefaultConfig()
		c.Dir = t.TempDir()
		c.IndexCacheSize, c.IndexMemTableSize, c.IndexRunSize = tc.cache, tc.memtable, tc.runs
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cache %d, memtable %d, runs %d: %v, want an error naming %s", tc.cache, tc.memtable, tc.runs, err, tc.want)
		}
	}
	// A disk budget caps the runs at a 16th of it, as the memtables.
	for _, tc := range []struct{ size, budget, want int64 }{
		{32 << 20, 0, 32 << 20},
		{32 << 20, 64 << 20, 4 << 20},
		{32 << 20, 512 << 10, 0},
		{0, 0, 0},
	} {
		if got := freeze.SplitBudget(tc.budget, tc.size).RunSize; got != tc.want {
			t.Errorf("runs of %d under a budget of %d: %d, want %d", tc.size, tc.budget, got, tc.want)
		}
	}
	c := DefaultConfig()
	c.Dir = t.TempDir()
	c.IndexCacheSize, c.IndexMemTableSize = 32<<20, 32<<20
	if err := c.Validate(); err != nil {
		t.Errorf("32 MiB each: %v", err)
	}
}
