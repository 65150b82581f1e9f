package handoff_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// Snapshot: FrozenAt = LastAdvertisement at the freeze time, an existing
// FrozenAt kept, a record without LastAdvertisement left without one.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	earlier := at.Add(-time.Hour)
	last, kept := testCid(t, "last"), testCid(t, "kept")
	recs := map[string]store.ProviderInfo{
		"fresh":  {AddrInfo: peer.AddrInfo{ID: peerID(t, "fresh")}, LastAdvertisement: last},
		"frozen": {AddrInfo: peer.AddrInfo{ID: peerID(t, "frozen")}, LastAdvertisement: last, FrozenAt: kept, FrozenAtTime: earlier},
		"no-ads": {AddrInfo: peer.AddrInfo{ID: peerID(t, "no-ads")}},
	}
	for _, r := range recs {
		if err := st.PutProvider(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := handoff.Snapshot(ctx, st, at); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		at   cid.Cid
		when time.Time
	}{"fresh": {last, at}, "frozen": {kept, earlier}, "no-ads": {cid.Undef, time.Time{}}}
	for name, r := range recs {
		got, err := st.Provider(ctx, r.AddrInfo.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w := want[name]; !got.FrozenAt.Equals(w.at) || !got.FrozenAtTime.Equal(w.when) {
			t.Errorf("%s: FrozenAt %v at %v, want %v at %v", name, got.FrozenAt, got.FrozenAtTime, w.at, w.when)
		}
	}
}

// churning yields, on every pass, a record that has no FrozenAt yet and
// forgets every write, as a store whose walks keep rewriting records would.
type churning struct {
	store.ProviderRecords
	rec store.ProviderInfo
}

func (c churning) Providers(context.Context) iter.Seq2[store.ProviderInfo, error] {
	return func(yield func(store.ProviderInfo, error) bool) { yield(c.rec, nil) }
}

func (churning) PutProvider(context.Context, store.ProviderInfo) error { return nil }

func TestSnapshotUnsettled(t *testing.T) {
	c := churning{rec: store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: peerID(t, "churn")}, LastAdvertisement: testCid(t, "x")}}
	if err := handoff.Snapshot(context.Background(), c, time.Now()); !errors.Is(err, handoff.ErrSnapshotUnsettled) {
		t.Fatalf("Snapshot over records that keep changing: %v, want ErrSnapshotUnsettled", err)
	}
}
