package assigner_test

import (
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p"

	"github.com/indexkit/indexkit/assigner"
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
