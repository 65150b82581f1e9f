package ipnisync_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// A client fetching one block after another reads each body to its end
// (a body with a Content-Length goes into one buffer of that size), so all
// of them travel over one kept-alive connection.
func TestBlocksReuseConnection(t *testing.T) {
	key := seededKey(t, 1)
	src := newMemSource()
	ch := buildChain(t, src, key, 5)
	pub, err := ipnisync.NewPublisher(key, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), ch.head); err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(pub)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newClient(t, peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
	for range 3 {
		sameCids(t, walk(t, c), ch.ads)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for %d sequential requests, want 1", n, 3*(1+2*len(ch.ads)))
	}
}

// A body shorter than its Content-Length fails the fetch; the next fetch
// works.
func TestShortBody(t *testing.T) {
	data, k := rawBlock(1000)
	short := true
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		if short {
			short = false
			w.Write(data[:len(data)-10])
			return
		}
		w.Write(data)
	})
	key := seededKey(t, 1)
	c := newClient(t, peer.AddrInfo{ID: peerID(t, key), Addrs: []ma.Multiaddr{maddr(t, srv, "")}})
	if _, err := c.Block(context.Background(), k); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Block of a short body: %v, want io.ErrUnexpectedEOF", err)
	}
	if got, err := c.Block(context.Background(), k); err != nil || len(got) != len(data) {
		t.Fatalf("Block: %d bytes, %v", len(got), err)
	}
}
