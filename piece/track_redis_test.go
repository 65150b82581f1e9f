package piece_test

import (
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/piece"
	pieceredis "github.com/indexkit/indexkit/piece/redis"
)

// redisStore returns a piece/redis store on REDIS_ADDR (else the machine's
// 127.0.0.1:6379) under a fresh key prefix, deleted at the end. Without a
// reachable Redis the test fails when CI is set and is skipped otherwise.
func redisStore(t *testing.T) *pieceredis.Store {
	t.Helper()
	rdb := redistest.Client(t, redistest.Addr())
	prefix := redistest.Prefix(t, rdb, "piece-track")
	s, err := pieceredis.New(rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestTrackerRedis walks two publishers, one from /providers and one from
// configuration, into the Redis store.
func TestTrackerRedis(t *testing.T) {
	st := redisStore(t)
	listed := servePublisher(t, chaingen.Config{Seed: 301, Ads: 12, MhsPerAd: 30, ChunkSize: 7, RemoveEvery: 5, PieceContextEvery: 3}, false)
	configured := servePublisher(t, chaingen.Config{Seed: 302, Ads: 8, MhsPerAd: 3, ReuseEvery: 3}, false)
	providers := serveProviders(t, func() []providersEntry { return []providersEntry{listed.entry()} })
	tr, err := piece.NewTracker(st, newDatastore(), testOptions(
		piece.WithProvidersURL(providers.URL+"/providers"),
		piece.WithPublishers(configured.srv.URL),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	runTracker(t, tr)
	for _, p := range []*publisher{listed, configured} {
		waitFor(t, 60*time.Second, func() (bool, string) { return upToDate(st, p) })
		checkPieces(t, st, p, piece.DefaultCapacity)
		truth, without := p.chain.Pieces()
		if s := status(st, p.chain.Provider); s.PiecesIndexed != int64(len(truth)) || s.AdsWithoutPiece != int64(without) {
			t.Errorf("provider %s: %+v, want %d pieces and %d ads without piece", p.chain.Provider, s, len(truth), without)
		}
	}
}
