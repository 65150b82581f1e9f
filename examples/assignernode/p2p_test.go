package assignernode_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/store/memory"
)

// p2pWait bounds each wait of the libp2p tests.
const p2pWait = 20 * time.Second

// A publisher reachable only over libp2p announces to the assigner over
// HTTP, naming its libp2p addresses: the assigner (default config, which
// verifies heads over libp2p with a host that only dials) verifies its
// head over libp2p and assigns it to a real indexer, which ingests its
// chain over libp2p, every multihash found through the find API. A
// libp2p publisher whose head is signed by another key is not assigned.
func TestLibp2pPublisherAssigned(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	// The indexer: assigner mode, libp2p on loopback, a memory index.
	index := memory.New()
	defer index.Close()
	icfg := indexernode.DefaultConfig()
	icfg.Dir, icfg.Store, icfg.Index = t.TempDir(), "", index
	icfg.P2P, icfg.UseAssigner, icfg.AllowPrivateAddrs = "/ip4/127.0.0.1/tcp/0", true, true
	ix, err := indexernode.New(ctx, icfg, indexernode.Listeners{Find: listen(t), Ingest: listen(t), Admin: listen(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ixDone := make(chan error, 1)
	go func() { ixDone <- ix.Run(ctx) }()

	// The assigner, as DefaultConfig has it but for loopback publishers,
	// with a host that only dials, for head checks (examples/assigner's
	// default, -p2p-verify without -p2p).
	cfg := assignernode.DefaultConfig()
	ia := ix.Addrs()
	cfg.Service.Indexers = []assigner.ServiceIndexer{{ID: "indexer-0", AdminURL: ia.AdminURL(), FindURL: ia.FindURL(), IngestURL: ia.IngestURL()}}
	cfg.AllowPrivateAddrs = true
	a, err := assignernode.New(ctx, cfg, assignernode.Listeners{Announce: listen(t), Verify: newHost(t, cfg, "")})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(ctx) }()
	defer func() {
		cancel()
		for name, done := range map[string]chan error{"assigner": aDone, "indexer": ixDone} {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s Run: %v", name, err)
				}
			case <-time.After(p2pWait):
				t.Errorf("%s Run did not return within %s of cancel", name, p2pWait)
			}
		}
	}()

	const seed = 27
	chain, err := chaingen.Generate(chaingen.Config{Seed: seed, Ads: 3, MhsPerAd: 10})
	if err != nil {
		t.Fatal(err)
	}
	// First an impostor: a libp2p publisher whose head is signed by a key
	// other than its own.
	otherKey, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	impostorKey, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	impostor, impostorAddrs := serveLibp2p(t, impostorKey, otherKey, chain)
	announceTo(t, a.Addrs().AnnounceURL(), impostor, chain.Head(), impostorAddrs)
	svc := a.Service()
	waitUntil(t, "the impostor's verification to fail", func() bool { return svc.Stats().Unverified == 1 })

	p, addrs := serveLibp2p(t, chain.PublisherKey, chain.PublisherKey, chain)
	announceTo(t, a.Addrs().AnnounceURL(), p, chain.Head(), addrs)
	want := chain.Model()
	start := time.Now()
	waitUntil(t, "the indexer to ingest the libp2p publisher's chain", func() bool { return want.Equal(ctx, index) == nil })
	t.Logf("announce to ingested: %v (%d multihashes)", time.Since(start), want.Multihashes())
	for ord := range uint64(want.Multihashes()) {
		mh := multihash.Multihash(chaingen.AppendMultihash(nil, seed, ord))
		resp, err := http.Get(ia.FindURL() + "/multihash/" + mh.B58String())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("find multihash %d: %s, want 200", ord, resp.Status)
		}
	}
	snap, err := svc.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, pub := range snap.Publishers {
		if pub.Publisher == impostor {
			t.Errorf("the impostor is in the assigner's state: %+v", pub)
		}
	}
	if st := svc.Stats(); st.Verified != 1 || st.Unverified != 1 {
		t.Errorf("stats %+v, want 1 verified, 1 unverified", st)
	}
}

// serveLibp2p serves chain's blocks and head, the head signed by signer,
// with the ipnisync publisher over libp2p only: a host of the identity
// key on 127.0.0.1 TCP (no relay; no NAT port mapping, mDNS or bootstrap,
// none of which libp2p.New turns on by default) and no HTTP listener. It
// returns the host's peer ID and its addresses ending in /p2p/<id>.
func serveLibp2p(t *testing.T, key, signer crypto.PrivKey, chain *chaingen.Chain) (peer.ID, []multiaddr.Multiaddr) {
	t.Helper()
	pub, err := ipnisync.NewPublisher(signer, ipnisync.BlockSourceFunc(func(ctx context.Context, c cid.Cid) ([]byte, error) {
		b, err := chain.Block(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ipnisync.ErrNotFound, err)
		}
		return b, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(t.Context(), chain.Head()); err != nil {
		t.Fatal(err)
	}
	sh, err := libp2p.New(libp2p.Identity(key), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
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
			t.Errorf("libp2phttp Serve: %v", err)
		}
	})
	suffix := multiaddr.StringCast("/p2p/" + sh.ID().String())
	var addrs []multiaddr.Multiaddr
	for _, m := range sh.Addrs() {
		addrs = append(addrs, m.Encapsulate(suffix))
	}
	return sh.ID(), addrs
}

// announceTo PUTs an HTTP announce of head by publisher p at addrs to the
// announce URL u.
func announceTo(t *testing.T, u string, p peer.ID, head cid.Cid, addrs []multiaddr.Multiaddr) {
	t.Helper()
	s, err := announce.NewHTTPSender([]string{u}, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), p2pWait)
	defer cancel()
	if err := s.Send(ctx, announce.Message{Cid: head, Addrs: addrs}); err != nil {
		t.Fatalf("announce of %s: %v", p, err)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// waitUntil polls cond every 20ms for at most p2pWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(p2pWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", p2pWait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
