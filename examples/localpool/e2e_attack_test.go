package localpool_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// TestE2EAnnounceAttacks: indexers run as their own processes on Pebble.
// An attacker, who holds no publisher's key, announces to every indexer's
// public ingest API and to the assigner:
//
//   - each real publisher, pointing at the attacker's server, whose chain
//     is an unsigned ad claiming the publisher's provider and whose head is
//     signed by the attacker (the hijack that used to stall a publisher
//     for good and replace its address);
//   - 300 made-up publishers at the attacker's server (head signed by the
//     wrong key) and 300 at a port where nothing listens.
//
// The honest truth is still answered in full; no indexer holds the
// attacker's address for a real publisher, nor any made-up publisher,
// before or after a restart.
func TestE2EAnnounceAttacks(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "pebble", Processes: true,
		Interval: 100 * time.Millisecond, Entries: 5, MaxAds: 60, PollInterval: 200 * time.Millisecond,
		Log: testLog{t}, LogLevel: 5,
	}
	ctx, p := startFaultPool(t, cfg)
	// The attack comes while the publishers publish.
	s := waitFor(t, ctx, p, "every publisher assigned and publishing", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			if ps.Ads < 5 || len(ps.Owners) != 1 {
				return false
			}
		}
		return len(s.Publishers) == 2
	})

	attacker, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[cid.Cid][]byte{}
	var evilHead cid.Cid
	src := ipnisync.BlockSourceFunc(func(_ context.Context, c cid.Cid) ([]byte, error) {
		if b, ok := blocks[c]; ok {
			return b, nil
		}
		return nil, ipnisync.ErrNotFound
	})
	evilPub, err := ipnisync.NewPublisher(attacker, src)
	if err != nil {
		t.Fatal(err)
	}
	evil := httptest.NewServer(evilPub)
	defer evil.Close()
	evilAddr := tcpHTTPAddr(t, evil.Listener.Addr())
	dead := multiaddr.StringCast("/ip4/127.0.0.1/tcp/1/http")

	urls := p.URLs()
	announceURLs := []string{urls.AssignerAnnounce}
	for _, ix := range urls.Indexers {
		announceURLs = append(announceURLs, ix.Ingest)
	}
	send := func(publisher peer.ID, addr multiaddr.Multiaddr, head cid.Cid) {
		t.Helper()
		snd, err := announce.NewHTTPSender(announceURLs, publisher)
		if err != nil {
			t.Fatal(err)
		}
		defer snd.Close()
		// A refusal (rate limit, too many unverified publishers) is a fine
		// answer to an attacker: only what the pool then holds matters.
		_ = snd.Send(ctx, announce.Message{Cid: head, Addrs: []multiaddr.Multiaddr{addr}})
	}

	for _, ps := range s.Publishers {
		id, err := peer.Decode(ps.ID)
		if err != nil {
			t.Fatal(err)
		}
		// An unsigned ad naming the publisher's provider, on top of its
		// real head, served as the attacker's head.
		head, err := cid.Decode(ps.Head)
		if err != nil {
			t.Fatal(err)
		}
		ad := &schema.Advertisement{
			PreviousID: head, Provider: ps.ID, Addresses: []string{"/ip4/127.0.0.1/tcp/9/http"},
			Entries: schema.NoEntries, ContextID: []byte("hijack"), Metadata: []byte{0x80, 0x12, 0x00},
		}
		block, c, err := ad.Encode()
		if err != nil {
			t.Fatal(err)
		}
		blocks[c], evilHead = block, c
		if err := evilPub.SetHead(ctx, evilHead); err != nil {
			t.Fatal(err)
		}
		send(id, evilAddr, evilHead)
	}
	var fakes []peer.ID
	for n := range 600 {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(k)
		fakes = append(fakes, id)
		addr := evilAddr
		if n%2 == 1 {
			addr = dead
		}
		send(id, addr, evilHead)
	}

	// The honest publishers go on; the front end answers all they published.
	waitFor(t, ctx, p, "every publisher at its last ad", func(s *localpool.Snapshot) bool { return honestAt(s, cfg.MaxAds) })
	c := waitComplete(t, ctx, p, "the honest publishers after the attack")
	t.Logf("honest truth through the front end after the attack: %v", c)

	check := func(when string) {
		t.Helper()
		for _, ix := range urls.Indexers {
			cl, err := admin.NewClient(ix.Admin, admin.WithClientToken(p.AdminToken()))
			if err != nil {
				t.Fatal(err)
			}
			var sts []admin.PublisherStatus
			for {
				if sts, err = cl.IngestStatus(ctx); err != nil {
					t.Fatalf("%s: %s: ingest status: %v", when, ix.Name, err)
				}
				walking := false
				for _, st := range sts {
					walking = walking || st.Walking
				}
				if !walking {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			for _, st := range sts {
				isFake := false
				for _, f := range fakes {
					isFake = isFake || st.Publisher == f
				}
				if isFake {
					t.Errorf("%s: %s remembers made-up publisher %s: %+v", when, ix.Name, st.Publisher, st)
				}
				for _, a := range st.Addrs {
					if a.Equal(evilAddr) || a.Equal(dead) {
						t.Errorf("%s: %s holds the attacker's address %s for publisher %s", when, ix.Name, a, st.Publisher)
					}
				}
			}
			t.Logf("%s: %s follows %d publishers", when, ix.Name, len(sts))
		}
	}
	// Give the indexers time to try every announce (one head request each).
	time.Sleep(2 * time.Second)
	check("after the attack")
	for _, ix := range urls.Indexers {
		if err := p.Restart(ctx, ix.Name); err != nil {
			t.Fatal(err)
		}
	}
	waitComplete(t, ctx, p, "the honest publishers after the indexers restarted")
	check("after a restart")
}

// tcpHTTPAddr is the /ip4/.../tcp/.../http multiaddr of a listener.
func tcpHTTPAddr(t *testing.T, a net.Addr) multiaddr.Multiaddr {
	t.Helper()
	ta := a.(*net.TCPAddr)
	return multiaddr.StringCast(fmt.Sprintf("/ip4/%s/tcp/%d/http", ta.IP, ta.Port))
}
