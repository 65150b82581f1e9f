package publishernode_test

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// A Config goes through encoding/json and back unchanged, but for its
// Logger, which is not encoded; Validate names the field at fault.
func TestConfigJSON(t *testing.T) {
	cfg := publishernode.DefaultConfig()
	cfg.Publishers, cfg.Seed, cfg.Interval, cfg.MaxAds = 3, 99, 250*time.Millisecond, 40
	cfg.PieceContextEvery, cfg.Announce, cfg.Dir, cfg.Fault = 2, []string{"http://127.0.0.1:3001"}, "/tmp/pub", publishernode.CorruptBlocks
	cfg.Logger = slog.New(slog.DiscardHandler)
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var back publishernode.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want := cfg
	want.Logger = nil
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v\n(JSON %s)", back, want, b)
	}
	if strings.Contains(string(b), "Logger") {
		t.Errorf("the Logger is encoded: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"Fault":"lies"}`), &back); err == nil {
		t.Error("an unknown Fault decoded")
	}

	for _, tc := range []struct {
		edit  func(*publishernode.Config)
		field string
	}{
		{func(c *publishernode.Config) { c.Publishers = 0 }, "Publishers"},
		{func(c *publishernode.Config) { c.Interval = 0 }, "Interval"},
		{func(c *publishernode.Config) { c.ChunkSize = 0 }, "ChunkSize"},
		{func(c *publishernode.Config) { c.ShutdownTimeout = -1 }, "ShutdownTimeout"},
		{func(c *publishernode.Config) { c.Fault = "lies" }, "Fault"},
	} {
		bad := publishernode.DefaultConfig()
		tc.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("Validate with a bad %s: %v", tc.field, err)
		}
	}
	if err := publishernode.DefaultConfig().Validate(); err != nil {
		t.Errorf("Validate(DefaultConfig()): %v", err)
	}
}
