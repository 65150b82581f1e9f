package handoff

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestMaxBodySizeEdge: a /providers answer of exactly the body limit is
// read; one byte more fails with ErrTooLarge.
func TestMaxBodySizeEdge(t *testing.T) {
	const body = `[ ]` // a list of no record, 3 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	hc := srv.Client()
	defer hc.CloseIdleConnections()
	log := slog.New(slog.DiscardHandler)
	pub := peer.ID("publisher")
	ctx := context.Background()
	if _, err := fetchProviders(ctx, hc, log, srv.URL+"/providers", pub, int64(len(body))); errors.Is(err, ErrTooLarge) || err != nil {
		t.Fatalf("an answer of %d bytes under a limit of %d: %v", len(body), len(body), err)
	}
	if _, err := fetchProviders(ctx, hc, log, srv.URL+"/providers", pub, int64(len(body)-1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an answer of %d bytes under a limit of %d: %v, want ErrTooLarge", len(body), len(body)-1, err)
	}
}
