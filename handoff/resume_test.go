package handoff_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/store"
)

func testCid(t *testing.T, s string) cid.Cid {
	t.Helper()
	mh, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, mh)
}

// ResumePoints: every distinct FrozenAt, the newest by FrozenAtTime last
// (the first listed among equals), records without FrozenAt never chosen.
func TestResumePoints(t *testing.T) {
	a, b, c := testCid(t, "a"), testCid(t, "b"), testCid(t, "c")
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	rec := func(at cid.Cid, when time.Time) store.ProviderInfo {
		return store.ProviderInfo{FrozenAt: at, FrozenAtTime: when}
	}
	for _, tc := range []struct {
		name   string
		recs   []store.ProviderInfo
		want   []cid.Cid
		chosen int
	}{
		{"none frozen", []store.ProviderInfo{rec(cid.Undef, t0), {}}, nil, -1},
		{"one", []store.ProviderInfo{{}, rec(a, t0)}, []cid.Cid{a}, 1},
		{"newest last", []store.ProviderInfo{rec(b, t0.Add(time.Minute)), rec(a, t0), rec(c, t0.Add(-time.Minute))}, []cid.Cid{a, c, b}, 0},
		{"first among equals", []store.ProviderInfo{rec(a, t0), rec(b, t0), rec(a, t0)}, []cid.Cid{b, a}, 0},
		{"undated is oldest", []store.ProviderInfo{rec(a, time.Time{}), rec(b, t0)}, []cid.Cid{a, b}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, chosen := handoff.ResumePoints(tc.recs)
			if !slices.EqualFunc(got, tc.want, cid.Cid.Equals) || chosen != tc.chosen {
				t.Fatalf("ResumePoints = %v, %d; want %v, %d", got, chosen, tc.want, tc.chosen)
			}
		})
	}
}

// resetLog records the Resets a Resume makes.
type resetLog struct {
	handoff.Ingest
	resets []cid.Cid
}

func (r *resetLog) Reset(_ context.Context, _ peer.ID, c cid.Cid) error {
	r.resets = append(r.resets, c)
	return nil
}

func TestResumeResetsInOrder(t *testing.T) {
	a, b := testCid(t, "a"), testCid(t, "b")
	log := &resetLog{}
	if err := handoff.Resume(context.Background(), log, peer.ID("p"), []cid.Cid{a, b}); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(log.resets, []cid.Cid{a, b}, cid.Cid.Equals) {
		t.Fatalf("resets %v, want %v then %v", log.resets, a, b)
	}
}
