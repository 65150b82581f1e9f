package publishernode_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// New wants one listener per publisher and names the field of a bad
// Config; Close before Run closes the listeners and makes Run fail;
// Close is idempotent.
func TestLifecycle(t *testing.T) {
	cfg := publishernode.DefaultConfig()
	cfg.Publishers = 2
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := publishernode.New(t.Context(), cfg, publishernode.Listeners{Publishers: []net.Listener{ln}}); err == nil || !strings.Contains(err.Error(), "want 2 listeners") {
		t.Errorf("New with one listener for two publishers: %v", err)
	}
	bad := cfg
	bad.ChunkSize = 0
	if _, err := publishernode.New(t.Context(), bad, publishernode.Listeners{Publishers: []net.Listener{ln, ln}}); err == nil || !strings.Contains(err.Error(), "ChunkSize 0") {
		t.Errorf("New with ChunkSize 0: %v", err)
	}
	bad = cfg
	bad.Fault = "lies"
	if _, err := publishernode.New(t.Context(), bad, publishernode.Listeners{Publishers: []net.Listener{ln, ln}}); !errors.Is(err, publishernode.ErrUnknownFault) {
		t.Errorf("New with an unknown fault: %v", err)
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := publishernode.New(t.Context(), cfg, publishernode.Listeners{Publishers: []net.Listener{ln, ln2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Addrs().Publishers; len(got) != 2 || got[0] != ln.Addr().String() || got[1] != ln2.Addr().String() {
		t.Errorf("Addrs().Publishers = %q", got)
	}
	if pubs := n.Publishers(); len(pubs) != 2 || pubs[0].ID() == pubs[1].ID() || pubs[0].Ads() != cfg.InitialAds {
		t.Errorf("publishers %v", pubs)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, l := range []net.Listener{ln, ln2} {
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			c.Close()
			t.Error("a listener still accepts after Close")
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := n.Run(ctx); !errors.Is(err, publishernode.ErrRunTwice) {
		t.Errorf("Run after Close: %v, want ErrRunTwice", err)
	}
}
