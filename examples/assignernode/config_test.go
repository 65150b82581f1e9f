package assignernode_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
)

func testPeer(t *testing.T, seed byte) peer.ID {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{seed}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A Config goes through encoding/json and back unchanged, but for its
// Logger and Hooks, which are not encoded; peer IDs and prefixes are text.
func TestConfigJSON(t *testing.T) {
	p1, p2 := testPeer(t, 1), testPeer(t, 2)
	cfg := assignernode.DefaultConfig()
	cfg.Service.Indexers = []assigner.ServiceIndexer{
		{ID: "a", AdminURL: "http://127.0.0.1:3002", FindURL: "http://127.0.0.1:3000", IngestURL: "http://127.0.0.1:3001", PresetPublishers: []peer.ID{p1}},
		{AdminURL: "http://127.0.0.1:4002"},
	}
	cfg.Service.Replication, cfg.Service.PollInterval = 2, 90*time.Second
	cfg.Service.Policy = &assignernode.Policy{Allow: true, Except: []peer.ID{p2}}
	cfg.AdminToken, cfg.AllowPrivateAddrs = "secret", true
	cfg.AnnounceRateExempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Hooks.Poll = func(assigner.PollResult) {}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"`+p1.String()+`"`) || !strings.Contains(s, `"127.0.0.0/8"`) {
		t.Errorf("peer IDs and prefixes are not text: %s", s)
	}
	var back assignernode.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want := cfg
	want.Logger, want.Hooks = nil, assigner.Hooks{}
	if back.Hooks.Poll != nil || !reflect.DeepEqual(withoutHooks(back), withoutHooks(want)) {
		t.Errorf("round trip:\n got %+v\nwant %+v\n(JSON %s)", back, want, b)
	}
	if err := back.Validate(); err != nil {
		t.Errorf("Validate after the round trip: %v", err)
	}
}

// withoutHooks is c without its hooks, which reflect.DeepEqual cannot
// compare (funcs are equal only when nil).
func withoutHooks(c assignernode.Config) assignernode.Config {
	c.Hooks = assigner.Hooks{}
	return c
}

// Validate names the field at fault.
func TestConfigValidate(t *testing.T) {
	base := assignernode.DefaultConfig()
	base.Service.Indexers = []assigner.ServiceIndexer{{AdminURL: "http://127.0.0.1:1"}}
	if err := base.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, tc := range []struct {
		edit  func(*assignernode.Config)
		field string
	}{
		{func(c *assignernode.Config) { c.Service.Indexers = nil }, "Service.Indexers"},
		{func(c *assignernode.Config) { c.RequestTimeout = 0 }, "RequestTimeout"},
		{func(c *assignernode.Config) { c.ShutdownTimeout = -time.Second }, "ShutdownTimeout"},
		{func(c *assignernode.Config) { c.AnnounceRate = -1 }, "AnnounceRate"},
		{func(c *assignernode.Config) { c.Service.Replication = -1 }, "Service: "},
		{func(c *assignernode.Config) {
			c.Service.Indexers = append(c.Service.Indexers, assigner.ServiceIndexer{AdminURL: "http://127.0.0.1:1"})
		}, "Service: "},
	} {
		bad := base
		tc.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("Validate: %v, want an error naming %s", err, tc.field)
		}
	}
}
