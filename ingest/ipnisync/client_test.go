package ipnisync_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

// The walker's view of a client: exactly these two methods.
var _ interface {
	Head(ctx context.Context) (cid.Cid, error)
	Block(ctx context.Context, c cid.Cid) ([]byte, error)
} = (*ipnisync.Client)(nil)

// walk fetches the head and every ad and entry chunk down the chain,
// decoding and verifying each as an indexer would, and returns the ads in
// the order met (newest first).
func walk(t *testing.T, c *ipnisync.Client) []cid.Cid {
	t.Helper()
	ctx := context.Background()
	next, err := c.Head(ctx)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	var got []cid.Cid
	for next.Defined() {
		block, err := c.Block(ctx, next)
		if err != nil {
			t.Fatalf("Block(ad %s): %v", next, err)
		}
		ad, err := schema.DecodeAdvertisement(next, block)
		if err != nil {
			t.Fatal(err)
		}
		signer, err := ad.VerifySignature()
		if err != nil || signer.String() != ad.Provider {
			t.Fatalf("ad %s: signer %s, %v", next, signer, err)
		}
		chunkBlock, err := c.Block(ctx, ad.Entries)
		if err != nil {
			t.Fatalf("Block(chunk %s): %v", ad.Entries, err)
		}
		chunk, err := schema.DecodeEntryChunk(ad.Entries, chunkBlock)
		if err != nil {
			t.Fatal(err)
		}
		if len(chunk.Entries) != 3 {
			t.Fatalf("chunk %s: %d entries, want 3", ad.Entries, len(chunk.Entries))
		}
		got = append(got, next)
		next = ad.PreviousID
	}
	return got
}

func sameCids(t *testing.T, got, want []cid.Cid) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d CIDs, want %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Equals(want[i]) {
			t.Fatalf("CID %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

func TestRoundTripHTTP(t *testing.T) {
	pub, srv, ch, _ := startPublisher(t, 5)

	t.Run("multiaddr", func(t *testing.T) {
		c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
		sameCids(t, walk(t, c), ch.ads)
	})
	t.Run("url", func(t *testing.T) {
		c, err := ipnisync.NewURL(srv.URL, pub.ID(), ipnisync.WithDialPolicy(privatePool))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sameCids(t, walk(t, c), ch.ads)
	})
	t.Run("concurrent", func(t *testing.T) {
		c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
		errs := make(chan error, len(ch.chunks))
		for _, k := range ch.chunks {
			go func() {
				_, err := c.Block(context.Background(), k)
				errs <- err
			}()
		}
		for range ch.chunks {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}

func TestNoHead(t *testing.T) {
	pub, srv, _, _ := startPublisher(t, 0)
	c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
	_, err := c.Head(context.Background())
	if !errors.Is(err, ipnisync.ErrNoHead) {
		t.Fatalf("Head of an empty publisher: %v, want ErrNoHead", err)
	}

	// A head set and removed again.
	src := newMemSource()
	ch := buildChain(t, src, seededKey(t, 1), 1)
	if err := pub.SetHead(context.Background(), ch.head); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Head(context.Background()); err != nil || !got.Equals(ch.head) {
		t.Fatalf("Head: %s, %v; want %s", got, err, ch.head)
	}
	if err := pub.SetHead(context.Background(), cid.Undef); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Head(context.Background()); !errors.Is(err, ipnisync.ErrNoHead) {
		t.Fatalf("Head after removal: %v, want ErrNoHead", err)
	}
}

func TestBlockNotFound(t *testing.T) {
	pub, srv, _, _ := startPublisher(t, 1)
	c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
	mh, _ := multihash.Sum([]byte("absent"), multihash.SHA2_256, -1)
	absent := cid.NewCidV1(schema.DagJSON, mh)
	_, err := c.Block(context.Background(), absent)
	if !errors.Is(err, ipnisync.ErrNotFound) {
		t.Fatalf("Block(absent): %v, want ErrNotFound", err)
	}
	var se *ipnisync.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Fatalf("Block(absent): %v, want a StatusError 404", err)
	}
	if !strings.Contains(err.Error(), srv.URL+"/ipni/v1/ad/"+absent.String()) {
		t.Errorf("error does not name the URL: %v", err)
	}
}

// serveFunc starts a test server answering with h.
func serveFunc(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestHashMismatch(t *testing.T) {
	src := newMemSource()
	key := seededKey(t, 1)
	ch := buildChain(t, src, key, 2)
	other, _ := src.Get(context.Background(), ch.ads[1])
	// A malicious publisher serves the second ad's bytes for every CID.
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) { w.Write(other) })
	c := newClient(t, peer.AddrInfo{ID: peerID(t, key), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
	_, err := c.Block(context.Background(), ch.ads[0])
	if !errors.Is(err, ipnisync.ErrHashMismatch) {
		t.Fatalf("Block: %v, want ErrHashMismatch", err)
	}
	if !strings.Contains(err.Error(), ch.ads[0].String()) {
		t.Errorf("error does not name the CID: %v", err)
	}
	if _, err := c.Block(context.Background(), ch.ads[1]); err != nil {
		t.Fatalf("Block of the matching CID: %v", err)
	}

	// An identity CID must hold the bytes served.
	idmh, _ := multihash.Sum([]byte("inline"), multihash.IDENTITY, -1)
	_, err = c.Block(context.Background(), cid.NewCidV1(cid.Raw, idmh))
	if !errors.Is(err, ipnisync.ErrHashMismatch) {
		t.Fatalf("Block(identity): %v, want ErrHashMismatch", err)
	}
}

// rawBlock is a raw-codec block of n bytes and its CID.
func rawBlock(n int) ([]byte, cid.Cid) {
	data := bytes.Repeat([]byte{'x'}, n)
	mh, _ := multihash.Sum(data, multihash.SHA2_256, -1)
	return data, cid.NewCidV1(cid.Raw, mh)
}

func TestBlockTooLarge(t *testing.T) {
	const limit = 1 << 16
	big, bigCid := rawBlock(limit + 1)
	fit, fitCid := rawBlock(limit)
	key := seededKey(t, 1)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(big)
	zw.Close()
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, fitCid.String()):
			w.Write(fit)
		case r.URL.Query().Get("mode") == "chunked" || strings.Contains(r.URL.Path, "/chunked/"):
			w.Write(big[:100])
			w.(http.Flusher).Flush() // no Content-Length
			w.Write(big[100:])
		case strings.Contains(r.URL.Path, "/gzip/"):
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz.Bytes())
		default:
			w.Write(big)
		}
	})
	for _, prefix := range []string{"", "/chunked", "/gzip"} {
		t.Run("limit"+prefix, func(t *testing.T) {
			c, err := ipnisync.NewURL(srv.URL+prefix, peerID(t, key), ipnisync.WithMaxBlockSize(limit), ipnisync.WithDialPolicy(privatePool))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Block(context.Background(), bigCid)
			if !errors.Is(err, ipnisync.ErrBlockTooLarge) {
				t.Fatalf("Block: %v, want ErrBlockTooLarge", err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(limit)) {
				t.Errorf("error does not name the limit: %v", err)
			}
			if got, err := c.Block(context.Background(), fitCid); err != nil || len(got) != limit {
				t.Fatalf("Block of exactly the limit: %d bytes, %v", len(got), err)
			}
		})
	}
	t.Run("default limit", func(t *testing.T) {
		huge, hugeCid := rawBlock(schema.MaxBlockSize + 1)
		srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) { w.Write(huge) })
		c := newClient(t, peer.AddrInfo{ID: peerID(t, key), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
		if _, err := c.Block(context.Background(), hugeCid); !errors.Is(err, ipnisync.ErrBlockTooLarge) {
			t.Fatalf("Block: %v, want ErrBlockTooLarge", err)
		}
	})
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/head") {
			// Hang before answering.
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		// Answer, then hang in the body.
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("{"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	key := seededKey(t, 1)
	const timeout = 200 * time.Millisecond
	c := newClient(t, peer.AddrInfo{ID: peerID(t, key), Addrs: []ma.Multiaddr{maddr(t, srv, "")}}, ipnisync.WithTimeout(timeout))
	_, k := rawBlock(10)
	for name, call := range map[string]func() error{
		"head":  func() error { _, err := c.Head(context.Background()); return err },
		"block": func() error { _, err := c.Block(context.Background(), k); return err },
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := call()
			elapsed := time.Since(start)
			if !errors.Is(err, ipnisync.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want ErrTimeout and DeadlineExceeded", err)
			}
			if elapsed > 10*timeout {
				t.Fatalf("took %v with a timeout of %v", elapsed, timeout)
			}
			if !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error does not name the URL: %v", err)
			}
		})
	}

	// The caller's own deadline is not reported as the client's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Head(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ipnisync.ErrTimeout) {
		t.Fatalf("Head with a short context: %v, want DeadlineExceeded without ErrTimeout", err)
	}
}

func TestHeadSignature(t *testing.T) {
	pub, srv, ch, _ := startPublisher(t, 1)
	addrs := []ma.Multiaddr{maddr(t, srv, "")}
	other := peerID(t, seededKey(t, 2))

	t.Run("wrong publisher", func(t *testing.T) {
		c := newClient(t, peer.AddrInfo{ID: other, Addrs: addrs})
		_, err := c.Head(context.Background())
		if !errors.Is(err, ipnisync.ErrBadSignature) {
			t.Fatalf("Head: %v, want ErrBadSignature", err)
		}
		if !strings.Contains(err.Error(), pub.ID().String()) || !strings.Contains(err.Error(), other.String()) {
			t.Errorf("error does not name both peers: %v", err)
		}
	})
	t.Run("verification off", func(t *testing.T) {
		c := newClient(t, peer.AddrInfo{ID: other, Addrs: addrs}, ipnisync.WithoutHeadVerification())
		if got, err := c.Head(context.Background()); err != nil || !got.Equals(ch.head) {
			t.Fatalf("Head: %s, %v", got, err)
		}
		c = newClient(t, peer.AddrInfo{Addrs: addrs}, ipnisync.WithoutHeadVerification())
		if got, err := c.Head(context.Background()); err != nil || !got.Equals(ch.head) {
			t.Fatalf("Head without a peer ID: %s, %v", got, err)
		}
	})

	// A head whose signature covers another CID.
	key := seededKey(t, 1)
	h, err := ipnisync.SignHead(key, ch.ads[0], ipnisync.DefaultTopic)
	if err != nil {
		t.Fatal(err)
	}
	_, other2 := rawBlock(3)
	h.Head = other2
	forged, _ := h.Encode()
	for name, body := range map[string][]byte{
		"forged":    forged,
		"malformed": []byte(`{"head":"nope"}`),
	} {
		t.Run(name, func(t *testing.T) {
			srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
			c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
			_, err := c.Head(context.Background())
			want := ipnisync.ErrBadSignature
			if name == "malformed" {
				want = ipnisync.ErrMalformedHead
			}
			if !errors.Is(err, want) {
				t.Fatalf("Head: %v, want %v", err, want)
			}
		})
	}
}

func TestHTTPPath(t *testing.T) {
	key := seededKey(t, 1)
	src := newMemSource()
	ch := buildChain(t, src, key, 3)
	pub, err := ipnisync.NewPublisher(key, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), ch.head); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/sub/path/", http.StripPrefix("/sub/path", pub))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	a := maddr(t, srv, "/sub/path")
	if !strings.Contains(a.String(), "/http-path/%2Fsub%2Fpath") {
		t.Fatalf("test multiaddr %s", a)
	}
	c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{a}})
	sameCids(t, walk(t, c), ch.ads)

	// Without the path the publisher is not there.
	c = newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
	if _, err := c.Head(context.Background()); !errors.Is(err, ipnisync.ErrNotFound) {
		t.Fatalf("Head without the http-path: %v, want 404", err)
	}
}

// recorder is a RoundTripper that records the Content-Encoding of answers.
type recorder struct {
	rt        http.RoundTripper
	encodings chan string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		select {
		case r.encodings <- resp.Header.Get("Content-Encoding"):
		default:
		}
	}
	return resp, err
}

func TestGzip(t *testing.T) {
	key := seededKey(t, 1)
	src := newMemSource()
	// A chunk long enough to be compressed.
	var mhs []multihash.Multihash
	for i := range 100 {
		mh, _ := multihash.Sum(fmt.Appendf(nil, "%d", i), multihash.SHA2_256, -1)
		mhs = append(mhs, mh)
	}
	block, k, err := (&schema.EntryChunk{Entries: mhs}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	src.put(k, block)
	pub, err := ipnisync.NewPublisher(key, src, ipnisync.WithGzip(true))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pub)
	defer srv.Close()

	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	rec := &recorder{rt: tr, encodings: make(chan string, 1)}
	c := newRawClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}},
		ipnisync.WithHTTPClient(&http.Client{Transport: rec}))
	got, err := c.Block(context.Background(), k)
	if err != nil || !bytes.Equal(got, block) {
		t.Fatalf("Block: %d bytes, %v", len(got), err)
	}
	if enc := <-rec.encodings; enc != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", enc)
	}

	// The default client asks for gzip and decodes it too.
	c = newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
	if got, err := c.Block(context.Background(), k); err != nil || !bytes.Equal(got, block) {
		t.Fatalf("Block with the default client: %d bytes, %v", len(got), err)
	}
}

func TestFailover(t *testing.T) {
	pub, srv, ch, _ := startPublisher(t, 2)
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", l.Addr().(*net.TCPAddr).Port))
	l.Close()
	tcp := ma.StringCast("/ip4/127.0.0.1/tcp/4001") // a libp2p address: skipped
	c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{tcp, dead, maddr(t, srv, "")}})
	sameCids(t, walk(t, c), ch.ads)
}

func TestNewErrors(t *testing.T) {
	id := peerID(t, seededKey(t, 1))
	httpAddr := ma.StringCast("/ip4/127.0.0.1/tcp/3000/http")
	for name, f := range map[string]func() error{
		"no peer ID": func() error {
			_, err := ipnisync.New(peer.AddrInfo{Addrs: []ma.Multiaddr{httpAddr}})
			return err
		},
		"no HTTP address": func() error {
			_, err := ipnisync.New(peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/3000")}})
			return err
		},
		"bad timeout": func() error {
			_, err := ipnisync.New(peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{httpAddr}}, ipnisync.WithTimeout(0))
			return err
		},
		"bad limit": func() error {
			_, err := ipnisync.New(peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{httpAddr}}, ipnisync.WithMaxBlockSize(-1))
			return err
		},
		"bad URL": func() error {
			_, err := ipnisync.NewURL("ftp://example.com", id)
			return err
		},
		"nil key": func() error {
			_, err := ipnisync.NewPublisher(nil, newMemSource())
			return err
		},
		"nil source": func() error {
			_, err := ipnisync.NewPublisher(seededKey(t, 1), nil)
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
