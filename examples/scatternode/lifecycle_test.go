package scatternode_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/scatternode"
)

// New refuses a missing listener and names the field of a bad Config;
// Close before Run closes the listener and makes Run fail; Close is
// idempotent.
func TestLifecycle(t *testing.T) {
	cfg := scatternode.DefaultConfig()
	cfg.Backends = []string{"http://127.0.0.1:1"}
	if _, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{}); err == nil || !strings.Contains(err.Error(), "Listeners.Find") {
		t.Errorf("New without a listener: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	bad := cfg
	bad.Timeout = 0
	if _, err := scatternode.New(t.Context(), bad, scatternode.Listeners{Find: ln}); err == nil || !strings.Contains(err.Error(), "Timeout 0s") {
		t.Errorf("New with Timeout 0: %v", err)
	}
	bad = cfg
	bad.Backends = append(bad.Backends, "HTTP://127.0.0.1:1/")
	if _, err := scatternode.New(t.Context(), bad, scatternode.Listeners{Find: ln}); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("New with a backend twice: %v", err)
	}
	s, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Addrs().Find, ln.Addr().String(); got != want {
		t.Errorf("Addrs().Find = %s, want %s", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after Close")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Run(ctx); !errors.Is(err, scatternode.ErrRunTwice) {
		t.Errorf("Run after Close: %v, want ErrRunTwice", err)
	}
}

// Reload swaps the backends in; the same config again changes nothing.
func TestReload(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := scatternode.DefaultConfig()
	cfg.Backends = []string{"http://127.0.0.1:1"}
	s, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cfg.Backends = []string{"http://127.0.0.1:2/", "http://127.0.0.1:3"}
	if applied, err := s.Reload(cfg); !applied || err != nil {
		t.Fatalf("Reload: %v, %v", applied, err)
	}
	if got := s.Config().Backends; len(got) != 2 || got[0] != "http://127.0.0.1:2" {
		t.Errorf("backends after Reload: %q", got)
	}
	if applied, err := s.Reload(cfg); applied || err != nil {
		t.Errorf("Reload of the same config: %v, %v; want no change", applied, err)
	}
	cfg.Backends = nil
	if applied, err := s.Reload(cfg); applied || err == nil {
		t.Errorf("Reload without backends: %v, %v; want an error", applied, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
