package ipnisync_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

// memSource is a goroutine-safe map of blocks.
type memSource struct {
	mu     sync.Mutex
	blocks map[cid.Cid][]byte
}

func newMemSource() *memSource { return &memSource{blocks: map[cid.Cid][]byte{}} }

func (s *memSource) put(c cid.Cid, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocks[c] = b
}

func (s *memSource) Get(_ context.Context, c cid.Cid) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blocks[c]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ipnisync.ErrNotFound, c)
	}
	return b, nil
}

// seededKey is an Ed25519 key from a fixed seed.
func seededKey(t testing.TB, seed byte) crypto.PrivKey {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{seed}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyOfType(t testing.TB, typ int) crypto.PrivKey {
	t.Helper()
	bits := -1
	if typ == crypto.RSA {
		bits = 2048
	}
	k, _, err := crypto.GenerateKeyPairWithReader(typ, bits, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func peerID(t testing.TB, k crypto.PrivKey) peer.ID {
	t.Helper()
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// chain is a small advertisement chain, newest first.
type chain struct {
	head   cid.Cid
	ads    []cid.Cid
	chunks []cid.Cid
}

// buildChain puts n ads signed by key, each with one entry chunk, into src.
// Odd ads' chunks are dag-cbor, to serve both codecs.
func buildChain(t testing.TB, src *memSource, key crypto.PrivKey, n int) chain {
	t.Helper()
	provider := peerID(t, key)
	var ch chain
	prev := cid.Undef
	for i := range n {
		var mhs []multihash.Multihash
		for j := range 3 {
			mh, err := multihash.Sum(fmt.Appendf(nil, "ad %d entry %d", i, j), multihash.SHA2_256, -1)
			if err != nil {
				t.Fatal(err)
			}
			mhs = append(mhs, mh)
		}
		codec := uint64(schema.DagJSON)
		if i%2 == 1 {
			codec = schema.DagCBOR
		}
		chunkBlock, chunkCid, err := (&schema.EntryChunk{Entries: mhs}).EncodeAs(codec)
		if err != nil {
			t.Fatal(err)
		}
		src.put(chunkCid, chunkBlock)
		ad := &schema.Advertisement{
			PreviousID: prev,
			Provider:   provider.String(),
			Addresses:  []string{"/ip4/127.0.0.1/tcp/9999/http"},
			Entries:    chunkCid,
			ContextID:  fmt.Appendf(nil, "ctx-%d", i),
			Metadata:   []byte{0x80, 0x12},
		}
		if err := ad.Sign(key); err != nil {
			t.Fatal(err)
		}
		adBlock, adCid, err := ad.Encode()
		if err != nil {
			t.Fatal(err)
		}
		src.put(adCid, adBlock)
		ch.ads = append([]cid.Cid{adCid}, ch.ads...)
		ch.chunks = append([]cid.Cid{chunkCid}, ch.chunks...)
		prev = adCid
	}
	ch.head = prev
	return ch
}

// maddr is the HTTP multiaddr of a test server, with an optional
// http-path.
func maddr(t testing.TB, srv *httptest.Server, httpPath string) ma.Multiaddr {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("/ip4/%s/tcp/%s/http", host, port)
	if httpPath != "" {
		s += "/http-path/" + url.QueryEscape(httpPath)
	}
	a, err := ma.NewMultiaddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startPublisher serves a publisher of an n-ad chain on a test server.
func startPublisher(t testing.TB, n int, opts ...ipnisync.PublisherOption) (*ipnisync.Publisher, *httptest.Server, chain, *memSource) {
	t.Helper()
	key := seededKey(t, 1)
	src := newMemSource()
	ch := buildChain(t, src, key, n)
	pub, err := ipnisync.NewPublisher(key, src, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		if err := pub.SetHead(context.Background(), ch.head); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(pub)
	t.Cleanup(srv.Close)
	return pub, srv, ch, src
}

// privatePool is the dial policy of a pool on this machine: the test
// publishers listen on 127.0.0.1, which the default policy refuses.
var privatePool = func() *netpolicy.Policy {
	p, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		panic(err)
	}
	return p
}()

// newClient is a client of pub over plain HTTP that may dial loopback
// addresses.
func newClient(t testing.TB, pub peer.AddrInfo, opts ...ipnisync.Option) *ipnisync.Client {
	t.Helper()
	return newRawClient(t, pub, append([]ipnisync.Option{ipnisync.WithDialPolicy(privatePool)}, opts...)...)
}

// newRawClient is a client of pub with opts only: the default dial
// policy, or the transport of WithHTTPClient or WithLibp2p.
func newRawClient(t testing.TB, pub peer.AddrInfo, opts ...ipnisync.Option) *ipnisync.Client {
	t.Helper()
	c, err := ipnisync.New(pub, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
