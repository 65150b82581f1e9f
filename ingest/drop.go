package ingest

import (
	"context"
	"fmt"
	"strings"

	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
)

// DropWalkState deletes from ds the state of every walker: the position
// of each publisher's walk (last head, walk in progress, pending and
// applied advertisements, backoff) and the list of walks in progress,
// keeping only each publisher's verified addresses, so that the next
// walk of a publisher starts from its head down to the start of its chain
// as a first walk does. It returns how many publishers had a state beyond their addresses.
//
// It is for a node whose index does not survive a restart (an in-memory
// store) while its datastore does: that node must not believe, after a
// restart, that it holds what its previous run indexed. Call it before
// [New] on ds, with no Ingester using ds. Keys that are not the walkers'
// (a handoff registry, for one) are left as they are.
func DropWalkState(ctx context.Context, ds datastore.Batching) (int, error) {
	b, err := ds.Batch(ctx)
	if err != nil {
		return 0, fmt.Errorf("ingest: drop walk state: %w", err)
	}
	pubs := map[string]bool{}
	keep := "/" + keyAddrs
	err = eachKey(ctx, ds, walkRoot+"/", func(k string) error {
		rest := strings.TrimPrefix(k, walkRoot+"/")
		pub, name, _ := strings.Cut(rest, "/")
		if "/"+name == keep {
			return nil
		}
		pubs[pub] = true
		return b.Delete(ctx, datastore.RawKey(k))
	})
	if err == nil {
		err = eachKey(ctx, ds, walkingRoot+"/", func(k string) error { return b.Delete(ctx, datastore.RawKey(k)) })
	}
	if err == nil {
		err = b.Commit(ctx)
	}
	if err == nil {
		err = ds.Sync(ctx, datastore.NewKey(walkRoot))
	}
	if err != nil {
		return 0, fmt.Errorf("ingest: drop walk state: %w", err)
	}
	return len(pubs), nil
}

// eachKey calls f with every key of ds under prefix.
func eachKey(ctx context.Context, ds datastore.Read, prefix string, f func(string) error) error {
	res, err := ds.Query(ctx, query.Query{Prefix: prefix, KeysOnly: true})
	if err != nil {
		return err
	}
	entries, err := res.Rest()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := f(e.Key); err != nil {
			return err
		}
	}
	return nil
}
