package ipnisync_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
)

// newHost is a libp2p host on 127.0.0.1 only: TCP, no relay, no NAT port
// mapping, no mDNS, no bootstrap, no metrics.
func newHost(t *testing.T, key crypto.PrivKey) host.Host {
	t.Helper()
	opts := []libp2p.Option{
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	}
	if key != nil {
		opts = append(opts, libp2p.Identity(key))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// serveLibp2p serves pub on a libp2phttp host over a stream host of the
// publisher's key.
func serveLibp2p(t *testing.T, pub *ipnisync.Publisher, key crypto.PrivKey) host.Host {
	t.Helper()
	sh := newHost(t, key)
	hh := &libp2phttp.Host{StreamHost: sh}
	if err := pub.MountLibp2p(hh); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- hh.Serve() }()
	t.Cleanup(func() {
		hh.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return sh
}

func TestRoundTripLibp2p(t *testing.T) {
	key := seededKey(t, 1)
	src := newMemSource()
	ch := buildChain(t, src, key, 4)
	pub, err := ipnisync.NewPublisher(key, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), ch.head); err != nil {
		t.Fatal(err)
	}
	server := serveLibp2p(t, pub, key)
	client := newHost(t, nil)
	info := peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()}

	c := newRawClient(t, info, ipnisync.WithLibp2p(client))
	sameCids(t, walk(t, c), ch.ads)

	// Unknown blocks and an empty head come through as over HTTP.
	_, absent := rawBlock(1)
	if _, err := c.Block(context.Background(), absent); !errors.Is(err, ipnisync.ErrNotFound) {
		t.Fatalf("Block(absent): %v, want ErrNotFound", err)
	}
	if err := pub.SetHead(context.Background(), ch.ads[1]); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Head(context.Background()); err != nil || !got.Equals(ch.ads[1]) {
		t.Fatalf("Head after SetHead: %s, %v", got, err)
	}

	// A server that mounts the protocol elsewhere lists the path in its
	// well-known resource, which the client follows.
	key2 := seededKey(t, 3)
	pub2, err := ipnisync.NewPublisher(key2, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub2.SetHead(context.Background(), ch.head); err != nil {
		t.Fatal(err)
	}
	sh2 := newHost(t, key2)
	hh2 := &libp2phttp.Host{StreamHost: sh2}
	hh2.SetHTTPHandlerAtPath(ipnisync.ProtocolID, "/custom/prefix/", pub2)
	done := make(chan error, 1)
	go func() { done <- hh2.Serve() }()
	defer func() { hh2.Close(); <-done }()
	c2 := newRawClient(t, peer.AddrInfo{ID: sh2.ID(), Addrs: sh2.Addrs()}, ipnisync.WithLibp2p(client))
	sameCids(t, walk(t, c2), ch.ads)
	if _, err := c2.Block(context.Background(), absent); err == nil || !strings.Contains(err.Error(), "/custom/prefix/"+absent.String()) {
		t.Fatalf("Block(absent) via the custom path: %v", err)
	}

	// A publisher whose stream host has another identity is refused.
	if err := pub.MountLibp2p(&libp2phttp.Host{StreamHost: client}); err == nil {
		t.Fatal("MountLibp2p on a host of another peer: no error")
	}
}

func TestLibp2pUnreachable(t *testing.T) {
	key := seededKey(t, 1)
	gone := newHost(t, key)
	info := peer.AddrInfo{ID: gone.ID(), Addrs: gone.Addrs()}
	gone.Close()
	client := newHost(t, nil)
	c := newRawClient(t, info, ipnisync.WithLibp2p(client), ipnisync.WithTimeout(2*time.Second))
	start := time.Now()
	if _, err := c.Head(context.Background()); err == nil {
		t.Fatal("Head of a closed host: no error")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
	if _, err := ipnisync.New(peer.AddrInfo{Addrs: info.Addrs}, ipnisync.WithLibp2p(client), ipnisync.WithoutHeadVerification()); err == nil {
		t.Fatal("New over libp2p without a peer ID: no error")
	}
}
