package announce_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newHost returns a libp2p host on 127.0.0.1 only, with no relay, NAT port
// mapping, mDNS or bootstrap.
func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(),
	)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func connect(t *testing.T, a, b host.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// node is a host with a running Gossip and, unless send-only, a Receiver.
type node struct {
	h host.Host
	r *announce.Receiver
	g *announce.Gossip
}

// startNodes starts n nodes (the last sendOnly of them without a Receiver),
// connects every pair, and waits until every Gossip sees the others on the
// topic. Cleanup stops Run, waits for it, and closes the hosts.
func startNodes(t *testing.T, n, sendOnly int, opts ...announce.GossipOption) []node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	nodes := make([]node, n)
	errs := make([]error, n)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for i, nd := range nodes {
			if errs[i] != nil {
				t.Errorf("node %d: Run: %v", i, errs[i])
			}
			if nd.r != nil {
				nd.r.Close()
			}
			if nd.h != nil {
				nd.h.Close()
			}
		}
	})
	for i := range nodes {
		nodes[i].h = newHost(t)
		if i < n-sendOnly {
			r, err := announce.NewReceiver()
			if err != nil {
				t.Fatal(err)
			}
			nodes[i].r = r
		}
		g, err := announce.NewGossip(nodes[i].h, nodes[i].r, append([]announce.GossipOption{announce.WithNetwork("testnet")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i].g = g
		wg.Go(func() { errs[i] = g.Run(ctx) })
	}
	for i := range nodes {
		for j := i + 1; j < n; j++ {
			connect(t, nodes[i].h, nodes[j].h)
		}
	}
	deadline := time.Now().Add(waitTimeout)
	for i, nd := range nodes {
		select {
		case <-nd.g.Ready():
		case <-time.After(time.Until(deadline)):
			t.Fatalf("node %d never joined", i)
		}
		for {
			peers := nd.g.Peers()
			all := true
			for j, o := range nodes {
				if j != i && !slices.Contains(peers, o.h.ID()) {
					all = false
				}
			}
			if all {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d sees only %v on the topic", i, peers)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nodes
}

func TestGossipSend(t *testing.T) {
	nodes := startNodes(t, 3, 1)
	pub := nodes[2] // send-only publisher
	if got := pub.g.Topic(); got != "/indexer/ingest/testnet" {
		t.Fatal(got)
	}
	m := announce.Message{Cid: testCID(t, "gossip-1"), Addrs: mustAddrs(t,
		"/ip4/127.0.0.1/tcp/3104/http/p2p/"+pub.h.ID().String(), "/ip4/127.0.0.1/tcp/3105/http"), ExtraData: []byte("x")}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := pub.g.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes[:2] {
		a := next(t, nd.r)
		if a.Source != announce.SourceGossip || a.Publisher != pub.h.ID() || a.Relay != pub.h.ID() ||
			!a.Cid.Equals(m.Cid) || string(a.ExtraData) != "x" || len(a.Addrs) != 2 ||
			a.Addrs[0].String() != "/ip4/127.0.0.1/tcp/3104/http" {
			t.Fatalf("got %+v", a)
		}
		if s := nd.r.Stats(); s.Gossip != 1 || s.Republished != 0 {
			t.Fatalf("stats %+v", s)
		}
	}
	// Bytes that are not an announce are counted and skipped.
	if err := pub.g.Send(ctx, announce.Message{}); !errors.Is(err, announce.ErrInvalidMessage) {
		t.Fatal(err)
	}
}

// An HTTP announce to one indexer reaches the other over gossip, as from
// the original publisher, and comes back to neither twice.
func TestGossipRepublish(t *testing.T) {
	nodes := startNodes(t, 2, 0)
	a, b := nodes[0], nodes[1]
	srv := httpServer(t, a.r)
	publisher := newPeer(t) // an HTTP-only publisher, not on gossip
	m := httpMessage(t, publisher, "http-1")
	if code, body := put(t, srv+"/announce", "", encode(t, m, false)); code != http.StatusNoContent {
		t.Fatalf("%d %s", code, body)
	}
	got := next(t, a.r)
	if got.Source != announce.SourceHTTP || got.Publisher != publisher {
		t.Fatalf("a got %+v", got)
	}
	got = next(t, b.r)
	if got.Source != announce.SourceGossip || got.Publisher != publisher || got.Relay != a.h.ID() ||
		!got.Cid.Equals(m.Cid) || len(got.Addrs) != 2 || got.Addrs[0].String() != "/ip4/127.0.0.1/tcp/3104/http" ||
		got.ExtraData != nil {
		t.Fatalf("b got %+v", got)
	}
	if s := a.r.Stats(); s.Republished != 1 {
		t.Fatalf("a stats %+v", s)
	}
	// a sees its own republish come back and ignores it.
	deadline := time.Now().Add(waitTimeout)
	for a.g.Stats().Self != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("a gossip stats %+v", a.g.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The same announce over HTTP to b now is a repeat.
	if code, _ := put(t, httpServer(t, b.r)+"/announce", "", encode(t, m, false)); code != http.StatusNoContent {
		t.Fatal(code)
	}
	noNext(t, a.r)
	noNext(t, b.r)
	if s := b.r.Stats(); s.Duplicates != 1 || s.Republished != 0 {
		t.Fatalf("b stats %+v", s)
	}
}

func TestGossipNotRunning(t *testing.T) {
	h := newHost(t)
	defer h.Close()
	r, _ := announce.NewReceiver()
	defer r.Close()
	g, err := announce.NewGossip(h, r)
	if err != nil {
		t.Fatal(err)
	}
	if g.Topic() != "/indexer/ingest/mainnet" {
		t.Fatal(g.Topic())
	}
	m := announce.Message{Cid: testCID(t, "x")}
	if err := g.Send(context.Background(), m); !errors.Is(err, announce.ErrNotRunning) {
		t.Fatal(err)
	}
	// A second Gossip cannot take over the Receiver's republishing.
	if _, err := announce.NewGossip(h, r); !errors.Is(err, announce.ErrInvalidOption) {
		t.Fatal(err)
	}
	if _, err := announce.NewGossip(h, r, announce.WithRepublish(false)); err != nil {
		t.Fatal(err)
	}
	// An HTTP announce while gossip is down is delivered; the republish
	// failure is counted.
	srv := httpServer(t, r)
	if code, _ := put(t, srv+"/announce", "", encode(t, httpMessage(t, newPeer(t), "a"), false)); code != 204 {
		t.Fatal(code)
	}
	next(t, r)
	if s := r.Stats(); s.RepublishFailed != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Run returns promptly when its context ends, and a concurrent Run is
	// refused.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case <-g.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("not ready")
	}
	if err := g.Run(ctx); !errors.Is(err, announce.ErrNotRunning) {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
	if err := g.Send(context.Background(), m); !errors.Is(err, announce.ErrNotRunning) {
		t.Fatal(err)
	}
}

func httpServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := newTestServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
