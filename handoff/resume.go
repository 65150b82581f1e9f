package handoff

import (
	"context"
	"fmt"
	"slices"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/store"
)

// ResumePoints returns where the walk of a publisher resumes, given the
// records of its providers at a frozen point (their FrozenAt and
// FrozenAtTime, as a frozen indexer lists them): the distinct FrozenAts to
// reset the walk to, in order, the one ingestion resumes after last, and
// the index in recs of the record that names it: the newest by
// FrozenAtTime, the first listed among equals. Records without a FrozenAt
// are never chosen; when none has one, points is nil and chosen -1. A
// handoff and an unfreeze both resume this way; see "Where ingestion
// resumes" in the package documentation, and [Resume].
func ResumePoints(recs []store.ProviderInfo) (points []cid.Cid, chosen int) {
	chosen = -1
	for i, rec := range recs {
		if !rec.FrozenAt.Defined() {
			continue
		}
		if chosen < 0 || rec.FrozenAtTime.After(recs[chosen].FrozenAtTime) {
			chosen = i
		}
	}
	if chosen < 0 {
		return nil, -1
	}
	last := recs[chosen].FrozenAt
	for _, rec := range recs {
		c := rec.FrozenAt
		if c.Defined() && !c.Equals(last) && !slices.ContainsFunc(points, c.Equals) {
			points = append(points, c)
		}
	}
	return append(points, last), chosen
}

// Resume resets the walk of publisher through ing to each of points, in
// order ([ResumePoints]'s): each reset keeps the applied markers of the
// earlier ones, so the next walk stops at the first of them it meets, and
// ingestion continues right after the last.
func Resume(ctx context.Context, ing Ingest, publisher peer.ID, points []cid.Cid) error {
	for _, c := range points {
		if err := ing.Reset(ctx, publisher, c); err != nil {
			return fmt.Errorf("handoff: %s: reset walk to %s: %w", publisher, c, err)
		}
	}
	return nil
}
