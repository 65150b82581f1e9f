package piece_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/piece"
)

// TestTrackerAppliesAsItWalks walks a long chain served slowly (every
// block request waits 10 ms): the piece of the newest advertisement is
// answered while the walk is still far from the chain's start, and the
// walk ends with every piece and exact counters.
func TestTrackerAppliesAsItWalks(t *testing.T) {
	ctx := context.Background()
	log := &requestLog{delay: 10 * time.Millisecond}
	pub := servePublisherWith(t, chaingen.Config{Seed: 401, Ads: 150, MhsPerAd: 4}, false, log.wrap)
	st := newMemory(t)
	tr, err := piece.NewTracker(st, newDatastore(), testOptions(piece.WithPublishers(pub.srv.URL))...)
	if err != nil {
		t.Fatal(err)
	}
	runTracker(t, tr)

	// The newest advertisement with a piece.
	var newest cid.Cid
	for i := pub.chain.Len() - 1; i >= 0 && !newest.Defined(); i-- {
		ad, err := pub.chain.Ad(i)
		if err != nil {
			t.Fatal(err)
		}
		if pc, ok := piece.PieceOf(ad.ContextID, ad.Metadata); ok && !ad.IsRm && ad.HasEntries() {
			newest = pc
		}
	}
	var served int
	waitFor(t, 30*time.Second, func() (bool, string) {
		_, err := st.Payloads(ctx, pub.chain.Provider, newest)
		_, served = log.count(cid.Undef)
		return err == nil, fmt.Sprintf("piece %s of the newest ad: %v", newest, err)
	})
	t.Logf("the newest ad's piece answered after %d block requests of about %d (walk at %d of %d ads)",
		served, 2*pub.chain.Len(), status(st, pub.chain.Provider).AdsWalked, pub.chain.Len())
	// Two blocks per ad (the ad and its first chunk): the whole chain is
	// 300 requests.
	if served > 20 {
		t.Errorf("the newest ad's piece was answered after %d block requests of about %d", served, 2*pub.chain.Len())
	}
	if s := status(st, pub.chain.Provider); s.LastHead.Defined() || s.AdsWalked >= int64(pub.chain.Len())/2 {
		t.Errorf("the walk was not far from the chain's start when the first piece was answered: %+v", s)
	}
	waitFor(t, 60*time.Second, func() (bool, string) { return upToDate(st, pub) })
	checkPieces(t, st, pub, st.Capacity())
}

// TestTrackerFirstEntryChunk walks ads of five entry chunks each: by
// default only the first chunk of each ad is requested from the
// publisher, and the samples come from it; with WithEntryChunks(0) every
// chunk is read and sampled.
func TestTrackerFirstEntryChunk(t *testing.T) {
	ctx := context.Background()
	cfg := chaingen.Config{Seed: 402, Ads: 12, MhsPerAd: 35, ChunkSize: 7}
	for _, tc := range []struct {
		name   string
		chunks int
		opts   []piece.TrackerOption
	}{
		{"default", 1, nil},
		{"all", 0, []piece.TrackerOption{piece.WithEntryChunks(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &requestLog{}
			pub := servePublisherWith(t, cfg, false, log.wrap)
			st := newMemory(t)
			tr, err := piece.NewTracker(st, newDatastore(), testOptions(append(tc.opts, piece.WithPublishers(pub.srv.URL))...)...)
			if err != nil {
				t.Fatal(err)
			}
			runTracker(t, tr)
			waitFor(t, 30*time.Second, func() (bool, string) { return upToDate(st, pub) })
			checkPiecesChunks(t, st, pub, st.Capacity(), tc.chunks)
			first, later, withPiece := 0, 0, 0
			for i := range pub.chain.Len() {
				ad, err := pub.chain.Ad(i)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := piece.PieceOf(ad.ContextID, ad.Metadata); !ok || ad.IsRm || !ad.HasEntries() {
					continue
				}
				withPiece++
				for n, e := 0, ad.Entries; e.Defined(); n++ {
					got, _ := log.count(e)
					if n == 0 {
						first += got
					} else {
						later += got
					}
					b, err := pub.chain.Block(ctx, e)
					if err != nil {
						t.Fatal(err)
					}
					ch, err := schema.DecodeEntryChunk(e, b)
					if err != nil {
						t.Fatal(err)
					}
					e = ch.Next
				}
			}
			if first != withPiece || first == 0 {
				t.Errorf("first chunks requested %d times, want once for each of the %d ads with a piece", first, withPiece)
			}
			if tc.chunks == 1 && later != 0 {
				t.Errorf("later chunks requested %d times with the first chunk only", later)
			}
			if tc.chunks == 0 && later != 4*first {
				t.Errorf("later chunks requested %d times reading every chunk, want %d", later, 4*first)
			}
		})
	}
}

// TestTrackersShareRedis runs two Trackers, each with its own walk-state
// datastore, on one Redis store, both told to walk the same four
// publishers. Every piece is sampled, every provider's counters are those
// of one walk (AdsWalked = the chain's length), and each chain is walked
// about once overall: the publishers serve each advertisement about once,
// not twice. When both Trackers have the same claim owner, claims do not
// keep them apart, they race on every step, and the conditional steps
// keep the counters exact.
func TestTrackersShareRedis(t *testing.T) {
	for _, tc := range []struct {
		name     string
		owners   []string
		maxRatio float64 // ad requests per ad, at most
	}{
		{"claims", nil, 1.1},
		{"racing", []string{"same", "same"}, 0}, // not bounded: both walk everything
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := redisStore(t)
			var pubs []*publisher
			var logs []*requestLog
			var addrs []string
			for i := range 4 {
				log := &requestLog{delay: time.Millisecond}
				p := servePublisherWith(t, chaingen.Config{Seed: 410 + uint64(i), Ads: 40, MhsPerAd: 3, ReuseEvery: 4}, false, log.wrap)
				pubs, logs, addrs = append(pubs, p), append(logs, log), append(addrs, p.addr.String()+"/p2p/"+p.chain.Publisher.String())
			}
			for i := range 2 {
				var owner piece.TrackerOption
				if tc.owners != nil {
					owner = piece.WithClaimOwner(tc.owners[i])
				}
				tr, err := piece.NewTracker(st, newDatastore(), testOptions(
					piece.WithPublishers(addrs...),
					owner,
					// A request timeout that a loaded machine cannot hit:
					// a timed-out fetch leaves a LastError, checked below.
					piece.WithIngestOptions(ingest.WithSlot(time.Second, 5), ingest.WithRequestTimeout(10*time.Second)),
				)...)
				if err != nil {
					t.Fatal(err)
				}
				runTracker(t, tr)
			}
			for _, p := range pubs {
				waitFor(t, 60*time.Second, func() (bool, string) { return upToDate(st, p) })
			}
			for i, p := range pubs {
				checkPieces(t, st, p, st.Capacity())
				s := status(st, p.chain.Provider)
				truth, without := p.chain.Pieces()
				if s.AdsWalked != int64(p.chain.Len()) || s.AdsWithoutPiece != int64(without) || s.PiecesIndexed != int64(len(truth)) {
					t.Errorf("provider %s: %+v; want %d ads walked, %d without piece, %d pieces", p.chain.Provider, s, p.chain.Len(), without, len(truth))
				}
				if s.LastError != "" {
					t.Errorf("provider %s: LastError %q", p.chain.Provider, s.LastError)
				}
				adRequests := 0
				for _, c := range p.chain.Ads {
					n, _ := logs[i].count(c)
					adRequests += n
				}
				ratio := float64(adRequests) / float64(p.chain.Len())
				t.Logf("publisher %d: %d advertisement requests for %d advertisements (%.2f each)", i, adRequests, p.chain.Len(), ratio)
				if tc.maxRatio > 0 && ratio > tc.maxRatio {
					t.Errorf("publisher %d: %d advertisement requests for %d advertisements: walked %.2f times, want about once", i, adRequests, p.chain.Len(), ratio)
				}
			}
		})
	}
}

// TestTrackerTakesOverWalk stops a Tracker in the middle of a long walk
// kept in Redis; a second Tracker on the same Redis (another datastore,
// another claim owner) takes the walk over once the first one's claim
// lapses, from where it stopped: the chain is walked once overall and
// counted exactly once.
func TestTrackerTakesOverWalk(t *testing.T) {
	st := redisStore(t)
	log := &requestLog{delay: 5 * time.Millisecond}
	pub := servePublisherWith(t, chaingen.Config{Seed: 420, Ads: 120, MhsPerAd: 3}, false, log.wrap)
	addr := pub.addr.String() + "/p2p/" + pub.chain.Publisher.String()
	opts := testOptions(piece.WithPublishers(addr), piece.WithClaimTTL(300*time.Millisecond),
		piece.WithIngestOptions(ingest.WithSlot(200*time.Millisecond, 10)))
	first, err := piece.NewTracker(st, newDatastore(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	stop := runTracker(t, first)
	waitFor(t, 30*time.Second, func() (bool, string) {
		s := status(st, pub.chain.Provider)
		return s.AdsWalked >= 30, fmt.Sprintf("%+v", s)
	})
	stop()
	mid := status(st, pub.chain.Provider)
	if mid.AdsWalked >= int64(pub.chain.Len()) {
		t.Fatalf("the walk was not stopped half way: %+v", mid)
	}
	second, err := piece.NewTracker(st, newDatastore(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	runTracker(t, second)
	waitFor(t, 60*time.Second, func() (bool, string) { return upToDate(st, pub) })
	checkPieces(t, st, pub, st.Capacity())
	adRequests := 0
	for _, c := range pub.chain.Ads {
		n, _ := log.count(c)
		adRequests += n
	}
	if adRequests > pub.chain.Len()+2 {
		t.Errorf("%d advertisement requests for %d advertisements: the second Tracker did not resume where the first stopped", adRequests, pub.chain.Len())
	}
}
