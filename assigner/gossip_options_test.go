package assigner_test

import (
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
)

// WithGossipOptions reaches the Gossip NewService makes: an invalid rate
// is NewService's error.
func TestWithGossipOptions(t *testing.T) {
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cfg := assigner.ServiceConfig{Indexers: []assigner.ServiceIndexer{
		{ID: "a", AdminURL: "http://127.0.0.1:1", IngestURL: "http://127.0.0.1:2"},
	}}
	_, err = assigner.NewService(cfg, assigner.WithGossip(h), assigner.WithGossipOptions(announce.WithPeerRate(1, 0)))
	if !errors.Is(err, assigner.ErrInvalidConfig) || !errors.Is(err, announce.ErrInvalidOption) {
		t.Errorf("NewService with an invalid peer rate: %v, want ErrInvalidConfig and announce.ErrInvalidOption", err)
	}
	if _, err := assigner.NewService(cfg, assigner.WithGossip(h), assigner.WithGossipOptions(announce.WithPeerRate(100, 200))); err != nil {
		t.Errorf("NewService with a peer rate: %v", err)
	}
}

// A ServiceOption given a value out of range fails NewService with
// ErrInvalidOption, and so does an admin.ClientOption it hands on.
func TestInvalidServiceOptions(t *testing.T) {
	cfg := assigner.ServiceConfig{Indexers: []assigner.ServiceIndexer{
		{ID: "a", AdminURL: "http://127.0.0.1:1", IngestURL: "http://127.0.0.1:2"},
	}}
	for name, opt := range map[string]assigner.ServiceOption{
		"WithLogger(nil)":              assigner.WithLogger(nil),
		"WithRequestTimeout(0)":        assigner.WithRequestTimeout(0),
		"WithGossip(nil)":              assigner.WithGossip(nil),
		"WithHTTPClient(nil)":          assigner.WithHTTPClient(nil),
		"WithVerifyHost(nil)":          assigner.WithVerifyHost(nil),
		"WithVerifyConcurrency(0)":     assigner.WithVerifyConcurrency(0),
		"WithVerifyQueue(0)":           assigner.WithVerifyQueue(0),
		"WithVerifyTimeout(-1)":        assigner.WithVerifyTimeout(-1),
		"WithVerifyRetryAfter(0)":      assigner.WithVerifyRetryAfter(0),
		"WithAnnouncePollInterval(0)":  assigner.WithAnnouncePollInterval(0),
		"WithAnnouncePollInterval(-1)": assigner.WithAnnouncePollInterval(-time.Second),
	} {
		if svc, err := assigner.NewService(cfg, opt); !errors.Is(err, assigner.ErrInvalidOption) || svc != nil {
			t.Errorf("NewService(%s) = %v, %v; want nil, ErrInvalidOption", name, svc, err)
		}
	}
	if _, err := assigner.NewService(cfg, assigner.WithAdminOptions(admin.WithMaxResponseBody(0))); !errors.Is(err, admin.ErrInvalidOption) {
		t.Errorf("NewService(WithAdminOptions(WithMaxResponseBody(0))): %v, want admin.ErrInvalidOption", err)
	}
}
