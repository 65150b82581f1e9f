package scatter

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

func gatherCid(s string) cid.Cid {
	mh, _ := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	return cid.NewCidV1(cid.Raw, mh)
}

func TestGatherProviders(t *testing.T) {
	frozenAt := gatherCid("frozen-at")
	// Indexer 0 froze holding P1; indexer 1 continues it after a handoff
	// and has processed newer advertisements.
	frozen := &gatherFake{providers: []find.ProviderInfo{
		{AddrInfo: peer.AddrInfo{ID: "P1"}, LastAdvertisement: frozenAt, LastAdvertisementTime: "2025-01-01T00:00:00Z", FrozenAt: frozenAt, FrozenAtTime: "2025-01-01T00:00:05Z", IndexCount: 1},
		{AddrInfo: peer.AddrInfo{ID: "P2"}, LastAdvertisementTime: "2025-01-02T00:00:00Z", IndexCount: 2},
		{AddrInfo: peer.AddrInfo{ID: "P4"}, LastAdvertisementTime: "2025-01-01T00:00:00Z", IndexCount: 40},
	}}
	continuing := &gatherFake{providers: []find.ProviderInfo{
		{AddrInfo: peer.AddrInfo{ID: "P3"}, LastAdvertisementTime: "bad time", IndexCount: 3},
		{AddrInfo: peer.AddrInfo{ID: "P1"}, LastAdvertisement: gatherCid("newer"), LastAdvertisementTime: "2025-03-01T00:00:00+01:00", IndexCount: 10},
		{AddrInfo: peer.AddrInfo{ID: "P2"}, LastAdvertisementTime: "2025-01-01T23:00:00Z", IndexCount: 20},
		{AddrInfo: peer.AddrInfo{ID: "P4"}, LastAdvertisementTime: "2025-01-01T00:00:00Z", IndexCount: 41},
	}}
	g, err := NewGather(gatherBackends(frozen, continuing))
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Providers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, p := range got {
		summary = append(summary, fmt.Sprintf("%s:%d:%v:%s", string(p.AddrInfo.ID), p.IndexCount, p.FrozenAt.Defined(), p.FrozenAtTime))
	}
	want := []string{
		"P1:10:true:2025-01-01T00:00:05Z", // newest, with FrozenAt carried over
		"P2:2:false:",                     // newest
		"P4:40:false:",                    // tie: the first backend's
		"P3:3:false:",                     // only one, unparsable time
	}
	if !slices.Equal(summary, want) {
		t.Errorf("providers %q, want %q", summary, want)
	}
	if !got[0].FrozenAt.Equals(frozenAt) || !got[0].LastAdvertisement.Equals(gatherCid("newer")) {
		t.Errorf("P1 = %+v", got[0])
	}

	p1, err := g.Provider(t.Context(), "P1")
	if err != nil || p1.IndexCount != 10 || !p1.FrozenAt.Equals(frozenAt) {
		t.Errorf("Provider(P1) = %+v, %v", p1, err)
	}
	if _, err := g.Provider(t.Context(), "P9"); !errors.Is(err, find.ErrNotFound) {
		t.Errorf("Provider(P9): %v, want find.ErrNotFound", err)
	}

	// One backend failing: what was found is returned; what was not found
	// is not "not found".
	continuing.provErr = errGatherBoom
	p2, err := g.Provider(t.Context(), "P2")
	if err != nil || p2.IndexCount != 2 {
		t.Errorf("Provider(P2) with a backend down = %+v, %v", p2, err)
	}
	_, err = g.Provider(t.Context(), "P3")
	checkPartialErr(t, err, &find.PartialError{Answered: 1, Total: 2}, errGatherBoom)
	list, err := g.Providers(t.Context())
	checkPartialErr(t, err, &find.PartialError{Answered: 1, Total: 2}, errGatherBoom)
	if len(list) != 3 {
		t.Errorf("Providers with a backend down: %d records, want the 3 of the other", len(list))
	}
}
