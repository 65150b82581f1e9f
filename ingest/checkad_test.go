package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store/memory"
)

// serveBlocks serves, with a real ipnisync Publisher on 127.0.0.1, the
// head of chain and the blocks of every chain given (the first one's and
// any other's: a publisher that holds blocks it did not sign), and returns
// its address.
func serveBlocks(t testing.TB, chains ...*chaingen.Chain) []multiaddr.Multiaddr {
	t.Helper()
	src := ipnisync.BlockSourceFunc(func(ctx context.Context, c cid.Cid) ([]byte, error) {
		for _, ch := range chains {
			if b, err := ch.Block(ctx, c); err == nil {
				return b, nil
			}
		}
		return nil, fmt.Errorf("%s: %w", c, ipnisync.ErrNotFound)
	})
	pub, err := ipnisync.NewPublisher(chains[0].PublisherKey, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), chains[0].Head()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(pub)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	port := ln.Addr().(*net.TCPAddr).Port
	return []multiaddr.Multiaddr{multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", port))}
}

func TestCheckAd(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 31, Ads: 5, MhsPerAd: 4, PublisherSigns: true})
	// Another publisher's chain, signed by its own publisher key; and a
	// chain whose provider signs (no separate publisher).
	foreign := generate(t, chaingen.Config{Seed: 32, Ads: 2, MhsPerAd: 4, PublisherSigns: true})
	providerSigned := generate(t, chaingen.Config{Seed: 33, Ads: 2, MhsPerAd: 4})
	addrs := serveBlocks(t, chain, foreign, providerSigned)

	var syncers httpSyncers
	defer syncers.close()
	st := memory.New()
	defer st.Close()
	ing, err := ingest.New(st, newDS(), syncers.syncer)
	if err != nil {
		t.Fatal(err)
	}

	ad3, err := chain.Ad(3)
	if err != nil {
		t.Fatal(err)
	}
	mh, _ := multihash.Sum([]byte("no such ad"), multihash.SHA2_256, -1)
	random := cid.NewCidV1(cid.DagJSON, mh)

	for _, tc := range []struct {
		name  string
		addrs []multiaddr.Multiaddr
		ad    cid.Cid
		want  []error // all must match; nil: success
	}{
		{name: "genuine ad", addrs: addrs, ad: chain.Ads[3]},
		{name: "genuine genesis ad", addrs: addrs, ad: chain.Ads[0]},
		{name: "random CID", addrs: addrs, ad: random, want: []error{ingest.ErrFetch, ipnisync.ErrNotFound}},
		{name: "entry chunk, not an ad", addrs: addrs, ad: ad3.Entries, want: []error{ingest.ErrInvalidBlock}},
		{name: "another publisher's ad", addrs: addrs, ad: foreign.Ads[1], want: []error{ingest.ErrSignature}},
		// Signed by its own provider: a valid ad, whoever serves it. The
		// caller checks the provider (a handoff: against the frozen
		// indexer's records).
		{name: "ad signed by its provider", addrs: addrs, ad: providerSigned.Ads[1]},
		{name: "no address known", ad: chain.Ads[3], want: []error{ingest.ErrFetch}},
		{name: "undefined CID", addrs: addrs, ad: cid.Undef, want: []error{ingest.ErrInvalidBlock}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ing.CheckAd(ctx, chain.Publisher, tc.addrs, tc.ad)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				_, c, err := got.Encode()
				if err != nil || !c.Equals(tc.ad) {
					t.Fatalf("returned ad encodes to %s (%v), want %s", c, err, tc.ad)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; got ad of provider %s", got.Provider)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v: not %v", err, w)
				}
			}
		})
	}

	// CheckAd walks nothing and records nothing: no walker state, no
	// provider record, no persisted address.
	if s, ok := ing.Status(chain.Publisher); ok && (s.LastHead.Defined() || s.AdsWalked != 0) {
		t.Fatalf("status after CheckAd: %+v", s)
	}
	for info, err := range st.Providers(ctx) {
		t.Fatalf("provider record after CheckAd: %+v, %v", info, err)
	}
	if _, err := ing.CheckAd(ctx, chain.Publisher, nil, chain.Ads[3]); !errors.Is(err, ingest.ErrFetch) {
		t.Fatalf("addresses were persisted by CheckAd: %v", err)
	}

	// After a walk from addrs, CheckAd without addresses uses the
	// addresses it persisted.
	if err := ing.Sync(ctx, chain.Publisher, addrs, chain.Ads[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := ing.CheckAd(ctx, chain.Publisher, nil, chain.Ads[4]); err != nil {
		t.Fatalf("CheckAd with stored addresses: %v", err)
	}
}

// A publisher that serves other bytes under an ad's CID fails the check:
// the block is verified against its CID.
func TestCheckAdHashMismatch(t *testing.T) {
	chain := generate(t, chaingen.Config{Seed: 34, Ads: 3, MhsPerAd: 2, PublisherSigns: true})
	other, err := chain.Block(context.Background(), chain.Ads[0])
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(other) // whatever is asked
	}))
	defer srv.Close()
	addr := multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", srv.Listener.Addr().(*net.TCPAddr).Port))
	var syncers httpSyncers
	defer syncers.close()
	st := memory.New()
	defer st.Close()
	ing, err := ingest.New(st, newDS(), syncers.syncer)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ing.CheckAd(context.Background(), chain.Publisher, []multiaddr.Multiaddr{addr}, chain.Ads[2])
	if !errors.Is(err, ingest.ErrFetch) || !errors.Is(err, ipnisync.ErrHashMismatch) {
		t.Fatalf("error %v: want ErrFetch wrapping ipnisync.ErrHashMismatch", err)
	}
	// The schema decoder checks the hash too, whatever the Syncer.
	if _, err := schema.DecodeAdvertisement(chain.Ads[2], other); !errors.Is(err, schema.ErrHashMismatch) {
		t.Fatalf("DecodeAdvertisement of other bytes: %v", err)
	}
}
