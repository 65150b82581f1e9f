package indexercmd

import (
	"io"
	"os"
	"path/filepath"
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

// The index's memory flags reach the node's Config.
func TestIndexMemoryFlags(t *testing.T) {
	fc, err := loadConfig([]string{"-index-cache-size", "1048576", "-index-memtable-size", "65536", "-index-run-size", "0"}, io.Discard)
	if err != nil || fc.IndexCacheSize != 1<<20 || fc.IndexMemTableSize != 64<<10 || fc.IndexRunSize != 0 {
		t.Errorf("flags: %+v, %v", fc, err)
	}
}
