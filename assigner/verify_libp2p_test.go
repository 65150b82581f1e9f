package assigner_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// newTestHost is a libp2p host with the identity key (a fresh one if
// nil), listening on 127.0.0.1 TCP if listen, dialling through the
// gater of policy: no relay, no NAT port mapping, mDNS or bootstrap (none
// of which libp2p.New turns on by default), no metrics.
func newTestHost(t *testing.T, key crypto.PrivKey, listen bool, policy *netpolicy.Policy) host.Host {
	t.Helper()
	opts := []libp2p.Option{libp2p.DisableRelay(), libp2p.DisableMetrics(), libp2p.ConnectionGater(ipnisync.NewGater(policy))}
	if listen {
		opts = append(opts, libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
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

// libp2pPublisher serves, over libp2p only (a host on 127.0.0.1 TCP with
// the identity key, no HTTP listener), an ipnisync publisher whose head
// head is signed by signer, and returns the host's peer ID and its
// addresses, each ending in /p2p/<id>, as a publisher announces them.
func libp2pPublisher(t *testing.T, key, signer crypto.PrivKey, head cid.Cid) (peer.ID, []multiaddr.Multiaddr) {
	t.Helper()
	pub, err := ipnisync.NewPublisher(signer, ipnisync.BlockSourceFunc(func(context.Context, cid.Cid) ([]byte, error) {
		return nil, ipnisync.ErrNotFound
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), head); err != nil {
		t.Fatal(err)
	}
	sh := newTestHost(t, key, true, nil)
	hh := &libp2phttp.Host{StreamHost: sh}
	if key == signer {
		if err := pub.MountLibp2p(hh); err != nil {
			t.Fatal(err)
		}
	} else {
		// MountLibp2p refuses a host of another identity: mount it by hand.
		hh.SetHTTPHandlerAtPath(ipnisync.ProtocolID, ipnisync.IPNIPath+"/", pub)
	}
	done := make(chan error, 1)
	go func() { done <- hh.Serve() }()
	t.Cleanup(func() {
		hh.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	suffix := multiaddr.StringCast("/p2p/" + sh.ID().String())
	var addrs []multiaddr.Multiaddr
	for _, a := range sh.Addrs() {
		addrs = append(addrs, a.Encapsulate(suffix))
	}
	return sh.ID(), addrs
}

func newKey(t *testing.T) crypto.PrivKey {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// With a verify host, a publisher reachable only over libp2p is verified
// over libp2p and assigned; one whose head is signed by another key, or
// whose addresses belong to another peer, is not; the connections opened
// for the checks are closed.
func TestServiceVerifiesLibp2pPublishers(t *testing.T) {
	a := newFakeIndexer(t, "a")
	vh := newTestHost(t, nil, false, privatePool) // dials only, on loopback
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a}, assigner.WithVerifyHost(vh),
		assigner.WithVerifyTimeout(5*time.Second))
	r.waitKnown(t)

	// Not assigned: a head signed by another key than the host's (the
	// publisher's), and an announce of a peer naming another peer's
	// addresses (the connection authenticates the peer it reaches).
	impostor, impostorAddrs := libp2pPublisher(t, newKey(t), newKey(t), randCid(t))
	otherKey := newKey(t)
	_, otherAddrs := libp2pPublisher(t, otherKey, otherKey, randCid(t))
	elsewhere := newPeerID(t)
	var bare []multiaddr.Multiaddr // the other's addresses without /p2p/
	for _, m := range otherAddrs {
		tr, _ := peer.SplitAddr(m)
		bare = append(bare, tr)
	}
	if err := r.announceAt(t, impostor, randCid(t), impostorAddrs...); err != nil {
		t.Fatal(err)
	}
	if err := r.announceAt(t, elsewhere, randCid(t), bare...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both verifications to fail", func() bool { return r.svc.Stats().Unverified == 2 })
	assertUntouched(t, r, a)

	// A real libp2p-only publisher is verified and assigned.
	key := newKey(t)
	p, addrs := libp2pPublisher(t, key, key, randCid(t))
	c := randCid(t)
	if err := r.announceAt(t, p, c, addrs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the libp2p publisher assigned", func() bool { _, ok := a.node.holds(p); return ok })
	if got := a.nextAnnounce(t); got.Publisher != p || got.Cid != c {
		t.Errorf("a got announce %s of %s, want %s of %s", got.Cid, got.Publisher, c, p)
	}
	if st := r.svc.Stats(); st.Verified != 1 || st.Unverified != 2 {
		t.Errorf("stats %+v, want 1 verified, 2 unverified", st)
	}
	for _, q := range []peer.ID{p, impostor} {
		if c := vh.Network().Connectedness(q); c == network.Connected {
			t.Errorf("the verify host is still connected to %s after its check", q)
		}
	}
}

// The verify host dials through its gater: with the default dial policy
// (public addresses only) a publisher on loopback is not verified.
func TestServiceVerifyLibp2pDialPolicy(t *testing.T) {
	a := newFakeIndexer(t, "a")
	vh := newTestHost(t, nil, false, nil)
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a}, assigner.WithVerifyHost(vh))
	r.waitKnown(t)
	key := newKey(t)
	p, addrs := libp2pPublisher(t, key, key, randCid(t))
	if err := r.announceAt(t, p, randCid(t), addrs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the verification to fail", func() bool { return r.svc.Stats().Unverified == 1 })
	assertUntouched(t, r, a)
}
