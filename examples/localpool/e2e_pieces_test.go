package localpool_test

import (
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/piece"
)

// TestE2EPieceSamples: the honest publishers name pieces in ContextIDs
// (every third new context, as Curio does: Config.PieceContextEvery's
// default) and in graphsync metadata. The pool's piece sampler, which
// finds the providers through the front end's /providers and walks their
// chains, answers a sample for a piece of each kind: signed (the
// signature verifies with piece.VerifySample), and every sample a payload
// of that piece in the ground truth. A piece no ad names is a verified
// PIECE_NOT_FOUND.
func TestE2EPieceSamples(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	const ads = 6
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "memory",
		Interval: 100 * time.Millisecond, Entries: 5, MaxAds: ads, PollInterval: 200 * time.Millisecond,
		Log: testLog{t}, LogLevel: 4,
	}
	ctx, p := startFaultPool(t, cfg)
	waitFor(t, ctx, p, "the publishers at their last ad", func(s *localpool.Snapshot) bool { return honestAt(s, ads) })
	pieces, err := p.Pieces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var inContext, inMetadata *publishernode.Piece
	for i := range pieces {
		switch {
		case pieces[i].InContextID && inContext == nil:
			inContext = &pieces[i]
		case !pieces[i].InContextID && inMetadata == nil:
			inMetadata = &pieces[i]
		}
	}
	if inContext == nil || inMetadata == nil {
		t.Fatalf("pieces %+v: want some named in a ContextID and some in metadata", pieces)
	}
	for _, pc := range []*publishernode.Piece{inContext, inMetadata} {
		var last localpool.PieceSample
		for !last.OK() {
			last = p.SamplePiece(ctx, *pc, "e2e", piece.MaxSamples)
			select {
			case <-ctx.Done():
				t.Fatalf("piece %s of %s (in ContextID: %v): %v", pc.Piece, pc.Provider, pc.InContextID, last)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if len(last.Samples) > min(len(pc.Payloads), piece.MaxSamples) {
			t.Fatalf("%d samples of a piece of %d payloads", len(last.Samples), len(pc.Payloads))
		}
		t.Logf("curl '%s': %v (in ContextID: %v)", last.URL, last, pc.InContextID)
	}
	// A piece of one provider asked of another is a signed "not found".
	for _, pc := range pieces {
		if pc.Provider == inContext.Provider {
			continue
		}
		bogus := publishernode.Piece{Provider: pc.Provider, Piece: inContext.Piece}
		s := p.SamplePiece(ctx, bogus, "e2e", 0)
		if !s.Verified || s.Code != piece.CodePieceNotFound || len(s.Samples) != 0 {
			t.Fatalf("piece %s of another provider: %+v, want a verified %s", bogus.Piece, s, piece.CodePieceNotFound)
		}
		break
	}
}
