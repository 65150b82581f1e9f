package piece_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-datastore"
	leveldb "github.com/ipfs/go-ds-leveldb"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/piece"
)

func openLevelDB(t *testing.T, dir string) *leveldb.Datastore {
	t.Helper()
	ds, err := leveldb.NewDatastore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestTrackerRestartResumes stops a Tracker in the middle of a walk, starts
// a new one on the same datastore (reopened, as after a restart) and store,
// and checks that it finishes the walk and ends where a clean run ends:
// same payloads for every piece, same counters.
func TestTrackerRestartResumes(t *testing.T) {
	ctx := context.Background()
	pub := servePublisher(t, chaingen.Config{Seed: 201, Ads: 120, MhsPerAd: 20, RemoveEvery: 9, PieceContextEvery: 5}, false)
	addr := pub.addr.String() + "/p2p/" + pub.chain.Publisher.String()
	dir := t.TempDir()

	st := newMemory(t)
	ds := openLevelDB(t, dir)
	// Slow enough (100 requests/s) to be stopped half way.
	tr, err := piece.NewTracker(st, ds, testOptions(piece.WithPublishers(addr), piece.WithIngestOptions(ingest.WithRequestRate(100, 1)))...)
	if err != nil {
		t.Fatal(err)
	}
	stop := runTracker(t, tr)
	waitFor(t, 30*time.Second, func() (bool, string) {
		s := status(st, pub.chain.Provider)
		return s.AdsWalked >= 20, fmt.Sprintf("%+v", s)
	})
	stop()
	mid := status(st, pub.chain.Provider)
	if mid.AdsWalked >= int64(pub.chain.Len()) || !mid.Head.Defined() {
		t.Fatalf("the walk was not stopped half way: %+v", mid)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}

	ds = openLevelDB(t, dir)
	defer ds.Close()
	tr, err = piece.NewTracker(st, ds, testOptions(piece.WithPublishers(addr))...)
	if err != nil {
		t.Fatal(err)
	}
	stop = runTracker(t, tr)
	waitFor(t, 60*time.Second, func() (bool, string) { return upToDate(st, pub) })
	stop()

	clean := newMemory(t)
	tr, err = piece.NewTracker(clean, newDatastore(), testOptions(piece.WithPublishers(addr))...)
	if err != nil {
		t.Fatal(err)
	}
	stop = runTracker(t, tr)
	waitFor(t, 60*time.Second, func() (bool, string) { return upToDate(clean, pub) })
	stop()

	checkPieces(t, st, pub, st.Capacity())
	truth, _ := pub.chain.Pieces()
	for pc := range truth {
		got, err1 := st.Payloads(ctx, pub.chain.Provider, pc)
		want, err2 := clean.Payloads(ctx, pub.chain.Provider, pc)
		if err1 != nil || err2 != nil || !slices.Equal(got, want) {
			t.Errorf("piece %s: resumed %v (%v), clean %v (%v)", pc, got, err1, want, err2)
		}
	}
	a, b := status(st, pub.chain.Provider), status(clean, pub.chain.Provider)
	if a.Counters != b.Counters || a.PiecesIndexed != b.PiecesIndexed || !a.LastHead.Equals(b.LastHead) {
		t.Errorf("resumed status %+v, clean %+v", a, b)
	}
}

var _ datastore.Batching = (*leveldb.Datastore)(nil)
