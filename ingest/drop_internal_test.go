package ingest

import (
	"context"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// DropWalkState deletes every walker's position and the walks in
// progress, keeps each publisher's addresses and every key that is not a
// walker's.
func TestDropWalkState(t *testing.T) {
	ctx := context.Background()
	ds := dssync.MutexWrap(datastore.NewMapDatastore())
	mh, _ := multihash.Sum([]byte("ad"), multihash.SHA2_256, -1)
	ad := cid.NewCidV1(cid.DagJSON, mh)
	pubs := []peer.ID{"publisher-one", "publisher-two"}
	put := func(k datastore.Key) {
		if err := ds.Put(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var dropped, kept []datastore.Key
	for _, p := range pubs {
		k := keysFor(p)
		dropped = append(dropped, k.key(keyLastHead), k.key(keyHead), k.key(keyBackoff), k.done(ad), k.seen(ad), k.queue(0), walkingKey(p))
		kept = append(kept, k.key(keyAddrs))
	}
	kept = append(kept, datastore.RawKey("/handoff/assigned/publisher-one"), datastore.RawKey("/walkers-not-ours"))
	for _, k := range append(dropped, kept...) {
		put(k)
	}
	n, err := DropWalkState(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(pubs) {
		t.Errorf("DropWalkState dropped the state of %d publishers, want %d", n, len(pubs))
	}
	for _, k := range dropped {
		if ok, _ := ds.Has(ctx, k); ok {
			t.Errorf("%s is still there", k)
		}
	}
	for _, k := range kept {
		if ok, _ := ds.Has(ctx, k); !ok {
			t.Errorf("%s is gone", k)
		}
	}
	if n, err := DropWalkState(ctx, ds); err != nil || n != 0 {
		t.Errorf("second DropWalkState: %d, %v; want 0 (addresses only), nil", n, err)
	}
}
