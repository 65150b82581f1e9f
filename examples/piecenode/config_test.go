package piecenode_test

import (
	"encoding/json"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/piecenode"
	"github.com/indexkit/indexkit/piece/memory"
)

// A Config goes through encoding/json and back unchanged, but for its
// collaborators (Store, WalkState, Key, Logger), which are not encoded;
// Validate names the field at fault.
func TestConfigJSON(t *testing.T) {
	cfg := piecenode.DefaultConfig()
	cfg.ProvidersURL, cfg.PollInterval, cfg.Publishers = "", 2*time.Second, []string{"http://127.0.0.1:3100"}
	cfg.AnnounceRateExempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	cfg.AllowPrivateAddrs, cfg.RequestRate, cfg.EntryChunks = true, 0.5, 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var back piecenode.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want := cfg
	want.Logger = nil
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v\n(JSON %s)", back, want, b)
	}
	st, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	withStore := cfg
	withStore.Store, withStore.Capacity = st, 0
	if b, err = json.Marshal(withStore); err != nil || strings.Contains(string(b), "Store") || strings.Contains(string(b), "Logger") {
		t.Errorf("a Config with collaborators encodes as %s (%v), want none of them", b, err)
	}

	if err := piecenode.DefaultConfig().Validate(); err != nil {
		t.Errorf("Validate(DefaultConfig()): %v", err)
	}
	bad := piecenode.DefaultConfig()
	bad.AnnounceRate = -1
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "AnnounceRate") {
		t.Errorf("Validate with a negative AnnounceRate: %v", err)
	}
}
