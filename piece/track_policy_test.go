package piece_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/piece"
)

// rewrap serves p's publisher again through h(p's handler), on a new
// loopback server, and returns the /providers entry naming it.
func rewrap(t *testing.T, p *publisher, h func(next http.Handler) http.Handler) providersEntry {
	t.Helper()
	srv := httptest.NewServer(h(p.pub))
	t.Cleanup(srv.Close)
	a, err := multiaddr.NewMultiaddr(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", srv.Listener.Addr().(*net.TCPAddr).Port))
	if err != nil {
		t.Fatal(err)
	}
	e := p.entry()
	e.Publisher = &peer.AddrInfo{ID: p.chain.Publisher, Addrs: []multiaddr.Multiaddr{a}}
	return e
}

// Publishers are named by /providers records and announces: by default
// the Tracker does not dial one on loopback, and its status says why.
func TestTrackerDialPolicy(t *testing.T) {
	st := newMemory(t)
	p := servePublisher(t, chaingen.Config{Seed: 301, Ads: 3, MhsPerAd: 2}, false)
	var hits atomic.Int64
	entry := rewrap(t, p, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); next.ServeHTTP(w, r) })
	})
	providers := serveProviders(t, func() []providersEntry { return []providersEntry{entry} })
	tr, err := piece.NewTracker(st, newDatastore(), testOptions(
		piece.WithProvidersURL(providers.URL+"/providers"), // the operator's choice: read with WithHTTPClient's client
		piece.WithDialPolicy(nil),                          // after testOptions' private pool: the default
	)...)
	if err != nil {
		t.Fatal(err)
	}
	runTracker(t, tr)
	waitFor(t, 20*time.Second, func() (bool, string) {
		s := status(st, p.chain.Provider)
		return strings.Contains(s.LastError, "loopback address not allowed"), fmt.Sprintf("status %+v", s)
	})
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback publisher got %d requests", n)
	}
}

// What a publisher writes in an error answer reaches neither the Store's
// status nor GET /ingestion-status, which anyone can read.
func TestTrackerErrorBodyNotServed(t *testing.T) {
	const marker = "MARKER-c0ffee-publisher-text"
	st := newMemory(t)
	p := servePublisher(t, chaingen.Config{Seed: 302, Ads: 3, MhsPerAd: 2}, false)
	entry := rewrap(t, p, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/head") {
				next.ServeHTTP(w, r)
				return
			}
			http.Error(w, marker+": disk on fire at /var/lib/secret", http.StatusInternalServerError)
		})
	})
	providers := serveProviders(t, func() []providersEntry { return []providersEntry{entry} })
	tr, err := piece.NewTracker(st, newDatastore(), testOptions(piece.WithProvidersURL(providers.URL+"/providers"))...)
	if err != nil {
		t.Fatal(err)
	}
	runTracker(t, tr)
	waitFor(t, 20*time.Second, func() (bool, string) {
		s := status(st, p.chain.Provider)
		return strings.Contains(s.LastError, "500"), fmt.Sprintf("status %+v", s)
	})
	s := status(st, p.chain.Provider)
	if strings.Contains(s.LastError, "MARKER") || strings.Contains(s.Text, "MARKER") {
		t.Fatalf("the status quotes the publisher's error body: %+v", s)
	}

	key, _ := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(make([]byte, 32)))
	h, err := piece.NewHandler(st, key)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(h)
	defer api.Close()
	resp, err := http.Get(api.URL + "/ingestion-status/" + p.chain.Provider.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "500") {
		t.Fatalf("GET /ingestion-status: %d %s, want the failure named", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "MARKER") {
		t.Fatalf("GET /ingestion-status serves the publisher's error body: %s", body)
	}
}

// WithAnnounceOptions reaches the announce receiver: over its source rate,
// an announce gets 429 and is not taken.
func TestTrackerAnnounceRate(t *testing.T) {
	tr, err := piece.NewTracker(newMemory(t), newDatastore(), testOptions(
		piece.WithAnnounceOptions(announce.WithSourceRate(0.001, 1)),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	srv := httptest.NewServer(tr.AnnounceHandler())
	defer srv.Close()
	pub := servePublisher(t, chaingen.Config{Seed: 303, Ads: 2, MhsPerAd: 2}, false)
	sender, err := announce.NewHTTPSender([]string{srv.URL}, pub.chain.Publisher, announce.WithHTTPClient(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	msg := announce.Message{Cid: pub.chain.Head(), Addrs: []multiaddr.Multiaddr{pub.addr}}
	if err := sender.Send(t.Context(), msg); err != nil {
		t.Fatalf("first announce: %v", err)
	}
	err = sender.Send(t.Context(), msg)
	if !errors.Is(err, announce.ErrRejected) || !strings.Contains(err.Error(), "429") {
		t.Fatalf("second announce at once: %v, want a 429 rejection", err)
	}
}
