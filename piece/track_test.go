package piece_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/piece"
)

// testOptions make walks fast and failures quick to show.
// privatePool is the dial policy of a pool on this machine: the test
// publishers listen on 127.0.0.1, which the default policy refuses.
var privatePool = func() *netpolicy.Policy {
	p, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		panic(err)
	}
	return p
}()

func testOptions(extra ...piece.TrackerOption) []piece.TrackerOption {
	return append([]piece.TrackerOption{
		piece.WithDialPolicy(privatePool),
		piece.WithPollInterval(200 * time.Millisecond),
		piece.WithIngestOptions(
			ingest.WithRequestTimeout(500*time.Millisecond),
			ingest.WithRequestRate(0, 0),
			ingest.WithBackoff(100*time.Millisecond, 400*time.Millisecond),
		),
		piece.WithStatusInterval(50 * time.Millisecond),
	}, extra...)
}

func newDatastore() datastore.Batching { return dssync.MutexWrap(datastore.NewMapDatastore()) }

// TestTrackerPool walks a pool of publishers learnt from /providers, from
// configuration and from an HTTP announce: mixed metadata orders with
// removals, updates and reused contexts; pieces in ContextIDs with a
// separate publisher key; dag-cbor blocks; a lost entry chunk; a corrupt
// advertisement; a publisher that hangs; a libp2p-only publisher. Every
// expected (provider, piece) pair is answered, the broken ones are reported
// in their status, and the others are not held up by them (three walk slots
// for eight publishers).
func TestTrackerPool(t *testing.T) {
	ctx := context.Background()
	st := newMemory(t)
	k := st.Capacity()

	mixed := servePublisher(t, chaingen.Config{Seed: 101, Ads: 16, MhsPerAd: 5, RemoveEvery: 5, UpdateEvery: 6, ReuseEvery: 7, ExtendedEvery: 4}, false)
	ctxPieces := servePublisher(t, chaingen.Config{Seed: 102, Ads: 10, MhsPerAd: 40, ChunkSize: 15, PieceContextEvery: 2, PublisherSigns: true}, false)
	cbor := servePublisher(t, chaingen.Config{Seed: 103, Ads: 8, MhsPerAd: 3, Codec: schema.DagCBOR, RemoveEvery: 4}, false)
	lost := servePublisher(t, chaingen.Config{Seed: 104, Ads: 6, MhsPerAd: 4}, false)
	corrupt := servePublisher(t, chaingen.Config{Seed: 105, Ads: 6, MhsPerAd: 4}, false)
	hanging := servePublisher(t, chaingen.Config{Seed: 106, Ads: 6, MhsPerAd: 4}, true)
	announced := servePublisher(t, chaingen.Config{Seed: 107, Ads: 5, MhsPerAd: 2}, false)
	other, _ := chaingen.Generate(chaingen.Config{Seed: 108})

	// Ad 3 (index 2) has graphsync + gateway metadata with a piece: lose
	// its entry chunk.
	lostAd, err := lost.chain.Ad(2)
	if err != nil {
		t.Fatal(err)
	}
	lostPiece, ok, err := metadata.PieceCID(lostAd.Metadata)
	if err != nil || !ok {
		t.Fatalf("ad 2 of the lost chain names no piece: %v", err)
	}
	lost.chain.RemoveBlock(lostAd.Entries)
	if err := corrupt.chain.Corrupt(corrupt.chain.Ads[3]); err != nil {
		t.Fatal(err)
	}

	libp2pOnly := providersEntry{
		AddrInfo:  peer.AddrInfo{ID: other.Provider},
		Publisher: &peer.AddrInfo{ID: other.Provider, Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/4001")}},
	}
	listed := []*publisher{mixed, ctxPieces, lost, corrupt, hanging}
	providers := serveProviders(t, func() []providersEntry {
		out := []providersEntry{libp2pOnly}
		for _, p := range listed {
			out = append(out, p.entry())
		}
		return out
	})

	tr, err := piece.NewTracker(st, newDatastore(), testOptions(
		piece.WithProvidersURL(providers.URL+"/providers"),
		piece.WithPublishers(cbor.srv.URL),
		piece.WithIngestOptions(ingest.WithWorkers(3)),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	annSrv := httptest.NewServer(tr.AnnounceHandler())
	defer annSrv.Close()
	runTracker(t, tr)

	sender, err := announce.NewHTTPSender([]string{annSrv.URL}, announced.chain.Publisher)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	if err := sender.Send(ctx, announce.Message{Cid: announced.chain.Head(), Addrs: []multiaddr.Multiaddr{announced.addr}}); err != nil {
		t.Fatal(err)
	}

	good := []*publisher{mixed, ctxPieces, cbor, lost, announced}
	waitFor(t, 60*time.Second, func() (bool, string) {
		for _, p := range good {
			if ok, why := upToDate(st, p); !ok {
				return false, why
			}
		}
		for _, p := range []*publisher{corrupt, hanging} {
			s := status(st, p.chain.Provider)
			if s.LastError == "" || !strings.Contains(s.Text, "walk failed") {
				return false, fmt.Sprintf("broken provider %s: %+v", p.chain.Provider, s)
			}
		}
		if s := status(st, other.Provider); !strings.Contains(s.Text, "unsupported protocol") {
			return false, fmt.Sprintf("libp2p-only provider: %+v", s)
		}
		return true, ""
	})

	for _, p := range good {
		var skip []cid.Cid
		if p == lost {
			skip = append(skip, lostPiece)
		}
		checkPieces(t, st, p, k, skip...)
		truth, without := p.chain.Pieces()
		s := status(st, p.chain.Provider)
		wantUnretrievable := int64(0)
		if p == lost {
			wantUnretrievable = 1
		}
		if s.AdsWithoutPiece != int64(without) || s.EntriesUnretrievable != wantUnretrievable ||
			s.PiecesIndexed != int64(len(truth)-len(skip)) {
			t.Errorf("provider %s: counters %+v pieces %d; want %d without piece, %d unretrievable, %d pieces",
				p.chain.Provider, s.Counters, s.PiecesIndexed, without, wantUnretrievable, len(truth)-len(skip))
		}
		if s.Address != p.srv.URL {
			t.Errorf("provider %s: address %q, want %q", p.chain.Provider, s.Address, p.srv.URL)
		}
		if s.Text != "up to date" {
			t.Errorf("provider %s: text %q, want up to date", p.chain.Provider, s.Text)
		}
	}
	if _, err := st.Payloads(ctx, lost.chain.Provider, lostPiece); err == nil {
		t.Errorf("the piece whose entries are lost has payloads")
	}
	if s := status(st, lost.chain.Provider); !strings.Contains(s.LastError, "not retrievable") {
		t.Errorf("lost provider: LastError %q, want the unretrievable entries named", s.LastError)
	}
	if s := status(st, corrupt.chain.Provider); !strings.Contains(s.LastError, "hash") {
		t.Errorf("corrupt provider: LastError %q, want a hash mismatch", s.LastError)
	}
	if s := status(st, hanging.chain.Provider); s.PiecesIndexed != 0 {
		t.Errorf("hanging provider: %d pieces indexed", s.PiecesIndexed)
	}

	// A new head, seen in /providers at the next poll, is walked.
	if err := mixed.chain.Extend(4); err != nil {
		t.Fatal(err)
	}
	if err := mixed.pub.SetHead(ctx, mixed.chain.Head()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() (bool, string) { return upToDate(st, mixed) })
	checkPieces(t, st, mixed, k)
}
