package announce_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/announce"
)

// closeCounter is a RoundTripper that counts CloseIdleConnections calls.
type closeCounter struct {
	http.RoundTripper
	closes atomic.Int32
}

func (c *closeCounter) CloseIdleConnections() { c.closes.Add(1) }

// Closing a sender releases its own connections only: a caller's client
// (and so http.DefaultTransport, which every default client shares) is
// left alone.
func TestSenderCloseLeavesCallersClient(t *testing.T) {
	pub, err := peer.Decode("12D3KooWHHzSeKaY8xuZVzkLbKFfvNgPPeKhFBGrMbNzbm5akpqu")
	if err != nil {
		t.Fatal(err)
	}
	tr := &closeCounter{RoundTripper: http.DefaultTransport}
	s, err := announce.NewHTTPSender([]string{"http://127.0.0.1:1"}, pub, announce.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := tr.closes.Load(); n != 0 {
		t.Fatalf("Close closed the caller's idle connections %d times", n)
	}
}
