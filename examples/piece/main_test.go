package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/piece"
)

// servePublisher serves a generated chain over ipnisync HTTP on 127.0.0.1.
func servePublisher(t *testing.T, cfg chaingen.Config) (*chaingen.Chain, *httptest.Server, multiaddr.Multiaddr) {
	t.Helper()
	c, err := chaingen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ipnisync.NewPublisher(c.PublisherKey, ipnisync.BlockSourceFunc(func(ctx context.Context, id cid.Cid) ([]byte, error) {
		b, err := c.Block(ctx, id)
		if errors.Is(err, chaingen.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", ipnisync.ErrNotFound, err)
		}
		return b, err
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetHead(context.Background(), c.Head()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	a := multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", srv.Listener.Addr().(*net.TCPAddr).Port))
	return c, srv, a
}

// serveProviders serves GET /providers listing chain's provider, published
// at addr, in the reference JSON shape.
func serveProviders(t *testing.T, c *chaingen.Chain, addr multiaddr.Multiaddr) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]map[string]any{{
			"AddrInfo":          peer.AddrInfo{ID: c.Provider},
			"LastAdvertisement": c.Head(),
			"Publisher":         peer.AddrInfo{ID: c.Publisher, Addrs: []multiaddr.Multiaddr{addr}},
		}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

type ingestionStatus struct {
	LastHeadWalkedFrom *string
	PiecesIndexed      int64
	AdsWalked          int64
	IngestionStatus    string
}

func getStatus(t *testing.T, base string, p peer.ID) (ingestionStatus, int) {
	t.Helper()
	resp, err := http.Get(base + "/ingestion-status/" + p.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s ingestionStatus
	_ = json.NewDecoder(resp.Body).Decode(&s)
	return s, resp.StatusCode
}

// waitWalked waits until the binary at base reports the provider's chain
// walked to its head, and returns the status.
func waitWalked(t *testing.T, base string, c *chaingen.Chain, p *proctest.Proc) ingestionStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, code := getStatus(t, base, c.Provider)
		if code == http.StatusOK && s.LastHeadWalkedFrom != nil && *s.LastHeadWalkedFrom == c.Head().String() {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain not walked after 60 s: status %d %+v\n%s", code, s, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkSamples asks for a signed sample of every piece of c and verifies it
// with the server's key and against the ground truth.
func checkSamples(t *testing.T, base string, c *chaingen.Chain, server peer.ID) {
	t.Helper()
	truth, _ := c.Pieces()
	for pc, mhs := range truth {
		seed := "seed-" + pc.String()[len(pc.String())-6:]
		resp, err := http.Get(base + "/sample/" + c.Provider.String() + "/" + pc.String() + "?seed=" + seed + "&n=3")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("piece %s: %d %s", pc, resp.StatusCode, body)
		}
		v, err := piece.VerifySample(body, c.Provider, pc, seed, piece.WithServer(server))
		if err != nil {
			t.Fatalf("piece %s: %v (%s)", pc, err, body)
		}
		want := make(map[cid.Cid]bool)
		for _, mh := range mhs {
			pc, _ := piece.PayloadCID(mh)
			want[pc] = true
		}
		if len(v.Samples) == 0 {
			t.Fatalf("piece %s: no samples", pc)
		}
		for _, s := range v.Samples {
			if !want[s] {
				t.Errorf("piece %s: sample %s was not advertised in it", pc, s)
			}
		}
	}
}

// serverID is the peer ID of the key file the binary created.
func serverID(t *testing.T, keyPath string) peer.ID {
	t.Helper()
	k, err := piece.LoadOrCreateKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestBinaryMemory runs the binary with the memory store against a
// publisher it learns from a /providers endpoint, and checks signed samples
// of every piece end to end.
func TestBinaryMemory(t *testing.T) {
	bin := proctest.Build(t, "./examples/piece")
	c, _, addr := servePublisher(t, chaingen.Config{Seed: 401, Ads: 12, MhsPerAd: 6, RemoveEvery: 5, PieceContextEvery: 3})
	providers := serveProviders(t, c, addr)
	dir := t.TempDir()
	p := proctest.Start(t, bin, "--listen", "127.0.0.1:0", "--providers-url", providers.URL+"/providers",
		"--poll-interval", "200ms", "--store", "memory", "--dir", dir, "--request-rate", "0",
		"--allow-private-addrs") // the test's publisher is on loopback
	base := "http://" + p.Addr("api")
	s := waitWalked(t, base, c, p)
	truth, _ := c.Pieces()
	if s.PiecesIndexed != int64(len(truth)) {
		t.Errorf("pieces indexed %d, want %d", s.PiecesIndexed, len(truth))
	}
	checkSamples(t, base, c, serverID(t, filepath.Join(dir, "key")))
	if code := p.Stop(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.Output())
	}
}

// TestBinaryRedisRestart runs the binary with the Redis store and a
// configured publisher, kills it (SIGKILL) in the middle of the walk, starts
// it again on the same directory and Redis prefix, and checks that it
// finishes the walk and answers every piece with the same key.
func TestBinaryRedisRestart(t *testing.T) {
	addr := redistest.Addr()
	rdb := redistest.Client(t, addr)
	prefix := redistest.Prefix(t, rdb, "piece-bin")

	bin := proctest.Build(t, "./examples/piece")
	c, srv, _ := servePublisher(t, chaingen.Config{Seed: 402, Ads: 150, MhsPerAd: 4, RemoveEvery: 7, PieceContextEvery: 4})
	dir := t.TempDir()
	args := []string{"--listen", "127.0.0.1:0", "--providers-url", "", "--publishers", srv.URL, "--poll-interval", "200ms",
		"--store", "redis", "--redis", addr, "--redis-prefix", prefix, "--dir", dir,
		"--allow-private-addrs"} // the test's publisher is on loopback

	// 100 requests/s: about 3 s for the whole chain; killed after 20 ads.
	p := proctest.Start(t, bin, append(args, "--request-rate", "100")...)
	base := "http://" + p.Addr("api")
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, code := getStatus(t, base, c.Provider)
		if code == http.StatusOK && s.AdsWalked >= 20 {
			if s.LastHeadWalkedFrom != nil {
				t.Fatalf("walk finished before the kill; the test proves nothing: %+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("walk did not progress: %d %+v\n%s", code, s, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(15 * time.Second)

	p = proctest.Start(t, bin, append(args, "--request-rate", "0")...)
	base = "http://" + p.Addr("api")
	s := waitWalked(t, base, c, p)
	// A kill may count again the one ad being applied (see piece.Tracker).
	if s.AdsWalked < int64(c.Len()) || s.AdsWalked > int64(c.Len())+1 {
		t.Errorf("ads walked %d, want %d (or one more)", s.AdsWalked, c.Len())
	}
	truth, _ := c.Pieces()
	if s.PiecesIndexed != int64(len(truth)) {
		t.Errorf("pieces indexed %d, want %d", s.PiecesIndexed, len(truth))
	}
	checkSamples(t, base, c, serverID(t, filepath.Join(dir, "key")))
	if code := p.Stop(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.Output())
	}
}

// TestBinaryStartupErrors: a key file that does not decode, or a busy
// port, ends the binary with status 1 and the cause on stderr.
func TestBinaryStartupErrors(t *testing.T) {
	bin := proctest.Build(t, "./examples/piece")
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("garbage\x00\xff"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:0", "--dir", dir}, "piece: -key: piece: key file " + key + " holds no libp2p private key"},
		{[]string{"--listen", busy, "--dir", t.TempDir()}, "piece: -listen " + busy + ": listen tcp " + busy + ": bind: address already in use"},
	} {
		p := proctest.Start(t, bin, append(tc.args, "--providers-url", "")...)
		if code := p.Wait(proctest.DefaultTimeout); code != 1 {
			t.Errorf("%q: exit status %d, want 1", tc.args, code)
		}
		if out := p.Output(); !strings.Contains(out, tc.want) || strings.Contains(out, "panic") {
			t.Errorf("%q: output does not say %q, or panics:\n%s", tc.args, tc.want, out)
		}
	}
}

// TestBinaryRedisUnreachable: an unreachable --redis is one error line
// naming the flag, with no lines the Redis client logs on its own
// ("redis: ... connection pool: failed to dial") ahead of it.
func TestBinaryRedisUnreachable(t *testing.T) {
	bin := proctest.Build(t, "./examples/piece")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a port nobody listens on
	p := proctest.Start(t, bin, "--store", "redis", "--redis", addr, "--listen", "127.0.0.1:0", "--providers-url", "", "--dir", t.TempDir())
	if code := p.Wait(proctest.DefaultTimeout); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	out := p.Output()
	if want := "piece: -redis " + addr + ": dial tcp " + addr; !strings.Contains(out, want) {
		t.Errorf("output does not say %q:\n%s", want, out)
	}
	if strings.Contains(out, "connection pool") || strings.Contains(out, "pool.go") {
		t.Errorf("the Redis client logged lines of its own:\n%s", out)
	}
}
