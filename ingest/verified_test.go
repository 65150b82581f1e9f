package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store/storetest"
)

// Over HTTP the ipnisync client hashes every block and the walker, told so
// by Client.BlocksVerified, does not hash entry chunks again. A chunk
// served with other bytes than its CID's, even bytes that decode to a
// well-formed chunk, is still refused: the walk stalls at its
// advertisement, with the advertisements before it applied and none of its
// multihashes indexed.
func TestSubstitutedChunkOverHTTP(t *testing.T) {
	for _, codec := range []uint64{schema.DagJSON, schema.DagCBOR} {
		t.Run(fmt.Sprintf("0x%x", codec), func(t *testing.T) {
			ctx := context.Background()
			chain := generate(t, chaingen.Config{Seed: 41, Ads: 3, MhsPerAd: 50, ChunkSize: 20, Codec: codec})
			good := storetest.Multihashes("served-over-http", 30)
			evil := storetest.Multihashes("substituted", 10)
			o := topAd(t, chain, chain.PublisherKey, func(ad *schema.Advertisement, o *overlay) {
				encode := func(ch *schema.EntryChunk) ([]byte, cid.Cid) {
					b, c, err := ch.EncodeAs(codec)
					if err != nil {
						t.Fatal(err)
					}
					return b, c
				}
				_, last := encode(&schema.EntryChunk{Entries: good[20:]})
				o.blocks[last], _ = encode(&schema.EntryChunk{Entries: evil}) // served under the CID of good[20:]
				b, first := encode(&schema.EntryChunk{Entries: good[:20], Next: last})
				o.blocks[first] = b
				ad.Entries = first
			})
			pub, err := ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(o.Block))
			if err != nil {
				t.Fatal(err)
			}
			if err := pub.SetHead(ctx, o.head); err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(pub)
			srv.Listener = ln
			srv.Start()
			defer srv.Close()
			addrs := []multiaddr.Multiaddr{multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", ln.Addr().(*net.TCPAddr).Port))}

			st := backends[0].open(t)
			var hs httpSyncers
			defer hs.close()
			ing, err := ingest.New(st, newDS(), hs.syncer)
			if err != nil {
				t.Fatal(err)
			}
			err = ing.Sync(ctx, chain.Publisher, addrs, cid.Undef)
			if !errors.Is(err, ingest.ErrFetch) || !errors.Is(err, ipnisync.ErrHashMismatch) {
				t.Fatalf("Sync: %v, want ErrFetch and ipnisync.ErrHashMismatch", err)
			}
			equalModel(t, chain.Model(), st)
			for _, mh := range append(good, evil...) {
				if vals, err := st.Get(ctx, mh); err != nil || len(vals) > 0 {
					t.Fatalf("multihash of the refused advertisement indexed: %v, %v", vals, err)
				}
			}
		})
	}
}
