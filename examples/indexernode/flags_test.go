package indexernode

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(`{"Dir":"/data","Store":"leveldb","Find":"0.0.0.0:3000","FreezeAt":80,"P2P":"none","Progress":"5s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig([]string{"-config", file, "-store", "memory", "-use-assigner", "-allow-private-addrs"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := defaultFileConfig()
	want.Dir, want.Store, want.Find, want.FreezeAt, want.P2P, want.Progress, want.UseAssigner, want.AllowPrivateAddrs =
		"/data", "memory", "0.0.0.0:3000", 80, "", duration(5*time.Second), true, true
	if c != want {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	if c, err := loadConfig(nil, io.Discard); err != nil || c != defaultFileConfig() {
		t.Fatalf("no flags: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"-store", "rocks"}, {"-freeze-at", "101"}, {"-topic", "/foo"}, {"-log-level", "loud"}, {"extra"},
		{"-max-conns", "-1"}, {"-max-conns-per-ip", "-1"}, {"-announce-rate", "-1"}, {"-gossip-peer-rate", "NaN"},
		{"-announce-rate-exempt", "10.0.0.0/33"},
	} {
		if _, err := loadConfig(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"Nope":1}`), 0o644)
	if _, err := loadConfig([]string{"-config", bad}, io.Discard); err == nil {
		t.Error("unknown config key: no error")
	}
}

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
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
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
		if got := runSize(tc.size, tc.budget); got != tc.want {
			t.Errorf("runs of %d under a budget of %d: %d, want %d", tc.size, tc.budget, got, tc.want)
		}
	}
	c := DefaultConfig()
	c.Dir = t.TempDir()
	c.IndexCacheSize, c.IndexMemTableSize = 32<<20, 32<<20
	if err := c.validate(); err != nil {
		t.Errorf("32 MiB each: %v", err)
	}
	fc, err := loadConfig([]string{"-index-cache-size", "1048576", "-index-memtable-size", "65536", "-index-run-size", "0"}, io.Discard)
	if err != nil || fc.IndexCacheSize != 1<<20 || fc.IndexMemTableSize != 64<<10 || fc.IndexRunSize != 0 {
		t.Errorf("flags: %+v, %v", fc, err)
	}
}
