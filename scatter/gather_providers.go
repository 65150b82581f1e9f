package scatter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/scatter/find"
)

// Providers asks every backend for its provider records and merges them:
// one record per provider, chosen as [Gather.Provider] describes, in the
// order providers are first seen (backend order, then each backend's).
//
// When some backends did not answer, Providers returns the merged records
// of those that did together with a [*find.PartialError]; the records are valid
// but the list may be incomplete.
func (g *Gather) Providers(ctx context.Context) ([]find.ProviderInfo, error) {
	lists := make([][]find.ProviderInfo, len(g.backends))
	err := g.each(ctx, func(ctx context.Context, i int) error {
		l, err := g.backends[i].Providers(ctx)
		if err == nil {
			lists[i] = l
		}
		return err
	})
	var order []peer.ID
	byID := make(map[peer.ID][]providerRecord)
	for i, l := range lists {
		for _, info := range l {
			id := info.AddrInfo.ID
			if _, ok := byID[id]; !ok {
				order = append(order, id)
			}
			byID[id] = append(byID[id], providerRecord{info, i})
		}
	}
	out := make([]find.ProviderInfo, 0, len(order))
	for _, id := range order {
		out = append(out, mergeProvider(byID[id]))
	}
	return out, err
}

// Provider asks every backend for the record of id and merges the ones
// found: the record with the newest LastAdvertisementTime wins (RFC 3339;
// a missing or unparsable time is older than any; ties go to the backend
// listed first). If that record is not frozen but another backend's is —
// a frozen indexer whose provider another indexer continues after a
// handoff — the newest record is returned with the FrozenAt and
// FrozenAtTime of the frozen one (of the newest FrozenAtTime if several
// are).
//
// If no backend has the record, Provider returns an error wrapping
// [find.ErrNotFound] when every backend answered, and otherwise a
// [*find.PartialError], which does not wrap ErrNotFound. A record found while
// some backends failed is returned without an error.
func (g *Gather) Provider(ctx context.Context, id peer.ID) (find.ProviderInfo, error) {
	found := make([]*find.ProviderInfo, len(g.backends))
	err := g.each(ctx, func(ctx context.Context, i int) error {
		info, err := g.backends[i].Provider(ctx, id)
		switch {
		case err == nil:
			found[i] = &info
		case errors.Is(err, find.ErrNotFound):
			return nil
		}
		return err
	})
	var recs []providerRecord
	for i, f := range found {
		if f != nil {
			recs = append(recs, providerRecord{*f, i})
		}
	}
	if len(recs) > 0 {
		return mergeProvider(recs), nil
	}
	if err != nil {
		return find.ProviderInfo{}, err
	}
	return find.ProviderInfo{}, fmt.Errorf("scatter: provider %s: %w", id, find.ErrNotFound)
}

type providerRecord struct {
	info    find.ProviderInfo
	backend int
}

// mergeProvider picks one record out of recs (one provider's, in backend
// order), as Provider documents.
func mergeProvider(recs []providerRecord) find.ProviderInfo {
	best, bestT := -1, time.Time{}
	frozen, frozenT := -1, time.Time{}
	for i, r := range recs {
		t := parseTime(r.info.LastAdvertisementTime)
		if best < 0 || t.After(bestT) {
			best, bestT = i, t
		}
		if r.info.FrozenAt.Defined() {
			ft := parseTime(r.info.FrozenAtTime)
			if frozen < 0 || ft.After(frozenT) {
				frozen, frozenT = i, ft
			}
		}
	}
	out := recs[best].info
	if !out.FrozenAt.Defined() && frozen >= 0 {
		out.FrozenAt = recs[frozen].info.FrozenAt
		out.FrozenAtTime = recs[frozen].info.FrozenAtTime
	}
	return out
}

// parseTime parses an RFC 3339 time; anything else is the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
