package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
)

// The provider record is written at checkpoints, not after every ad: a
// writer of the record beside the ingester (a handoff setting FrozenAt)
// keeps what it wrote, the record ends at the head, and it never lags by
// more than a checkpoint.
func TestProviderRecordAtCheckpoints(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st := b.open(t)
			chain := generate(t, chaingen.Config{Seed: 5, Ads: 40, MhsPerAd: 3, ExtendedEvery: 9})
			srcs := newSources()
			srcs.set(chain.Publisher, chain.Source())
			frozenAt := chain.Head() // any CID
			const every = 4
			var applied []cid.Cid
			var lagErr error
			ing := newIngester(t, st, newDS(), srcs, ingest.WithCheckpoint(every, time.Hour),
				ingest.WithHooks(ingest.Hooks{AdApplied: func(_, provider peer.ID, ad cid.Cid, _ time.Duration) {
					applied = append(applied, ad)
					info, err := st.Provider(ctx, provider)
					if err != nil {
						if len(applied) > every {
							lagErr = err
						}
						return
					}
					if len(applied) == 10 {
						info.FrozenAt, info.FrozenAtTime = frozenAt, time.Now()
						if err := st.PutProvider(ctx, info); err != nil {
							lagErr = err
						}
					}
					if len(applied) > every && !slices.Contains(applied[len(applied)-every-1:], info.LastAdvertisement) {
						lagErr = fmt.Errorf("after %d ads the record names %s, more than a checkpoint behind", len(applied), info.LastAdvertisement)
					}
				}}))
			if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
				t.Fatal(err)
			}
			if lagErr != nil {
				t.Fatal(lagErr)
			}
			info, err := st.Provider(ctx, chain.Provider)
			if err != nil {
				t.Fatal(err)
			}
			if info.LastAdvertisement != chain.Head() {
				t.Errorf("LastAdvertisement %s, want the head %s", info.LastAdvertisement, chain.Head())
			}
			if info.FrozenAt != frozenAt {
				t.Errorf("FrozenAt %s written beside the ingester was lost: %s", frozenAt, info.FrozenAt)
			}
			if info.Publisher.ID != chain.Publisher || len(info.AddrInfo.Addrs) == 0 {
				t.Errorf("record %+v: want publisher %s and addresses", info, chain.Publisher)
			}
		})
	}
}
