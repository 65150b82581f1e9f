package assignernode_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// New refuses a missing announce listener and names the field of a bad
// Config; without a state listener the state API is not served; Close
// before Run closes the listener and makes Run fail; Close is idempotent.
func TestLifecycle(t *testing.T) {
	cfg := assignernode.DefaultConfig()
	cfg.Service.Indexers = []assigner.ServiceIndexer{{AdminURL: "http://127.0.0.1:1"}}
	if _, err := assignernode.New(t.Context(), cfg, assignernode.Listeners{}); err == nil || !strings.Contains(err.Error(), "Listeners.Announce") {
		t.Errorf("New without a listener: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name string
		edit func(*assignernode.Config)
		want string
	}{
		{"no indexer", func(c *assignernode.Config) { c.Service.Indexers = nil }, "Service.Indexers"},
		{"no request timeout", func(c *assignernode.Config) { c.RequestTimeout = 0 }, "RequestTimeout"},
		{"negative rate", func(c *assignernode.Config) { c.GossipPeerRate = -1 }, "GossipPeerRate"},
		{"bad topic", func(c *assignernode.Config) { c.Service.Topic = "/foo" }, "Service: "},
		{"negative poll interval", func(c *assignernode.Config) { c.Service.PollInterval = -1 }, "Service.PollInterval"},
	} {
		bad := cfg
		tc.edit(&bad)
		if _, err := assignernode.New(t.Context(), bad, assignernode.Listeners{Announce: ln}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	a, err := assignernode.New(t.Context(), cfg, assignernode.Listeners{Announce: ln})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Addrs(); got.Announce != ln.Addr().String() || got.State != "" || got.PeerID != "" || len(got.P2P) != 0 {
		t.Errorf("Addrs() = %+v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after Close")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := a.Run(ctx); !errors.Is(err, assignernode.ErrRunTwice) {
		t.Errorf("Run after Close: %v, want ErrRunTwice", err)
	}
}

// With a P2P host the assigner gossips on it: Addrs reports its peer ID
// and its multiaddrs ending in /p2p/<id>; Close closes it, and the
// Verify host once even when it is the same.
func TestP2PAddrs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := assignernode.DefaultConfig()
	cfg.Service.Indexers = []assigner.ServiceIndexer{{AdminURL: "http://127.0.0.1:1"}}
	h := newHost(t, cfg, "/ip4/127.0.0.1/tcp/0")
	a, err := assignernode.New(t.Context(), cfg, assignernode.Listeners{Announce: ln, P2P: h, Verify: h})
	if err != nil {
		t.Fatal(err)
	}
	got := a.Addrs()
	if got.PeerID != h.ID() || len(got.P2P) == 0 {
		t.Fatalf("Addrs() = %+v, want the host's", got)
	}
	for _, m := range got.P2P {
		if !strings.HasSuffix(m.String(), "/p2p/"+got.PeerID.String()) {
			t.Errorf("p2p address %s does not end in the peer ID", m)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(h.Network().ListenAddresses()) != 0 {
		t.Errorf("the host still listens on %v after Close", h.Network().ListenAddresses())
	}
}

// newHost is a libp2p host as examples/assigner starts one: listening on
// listen (or nowhere when ""), dialling through the gater of cfg's dial
// policy.
func newHost(t *testing.T, cfg assignernode.Config, listen string) host.Host {
	t.Helper()
	policy, err := cfg.DialPolicy()
	if err != nil {
		t.Fatal(err)
	}
	addrs := libp2p.NoListenAddrs
	if listen != "" {
		addrs = libp2p.ListenAddrStrings(listen)
	}
	h, err := libp2p.New(addrs, libp2p.DisableRelay(), libp2p.DisableMetrics(), libp2p.ConnectionGater(ipnisync.NewGater(policy)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
