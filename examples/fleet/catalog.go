package main

import (
	"context"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/lease"
)

// indexFiles are r's files as the index takes them.
func indexFiles(fs []repogen.File) []codeindex.File {
	out := make([]codeindex.File, len(fs))
	for i, f := range fs {
		out[i] = codeindex.File(f)
	}
	return out
}

// estimate is the catalog's guess of r's index size (codeindex.Estimate):
// its row's Size and MinBid. The node reports the exact size once it has
// indexed the repo.
func estimate(r repogen.Repo) int64 { return codeindex.Estimate(indexFiles(r.Files)) }

// putCatalog writes the repos into the fleet's catalog
// (fleetnode.PutCatalog), each row's Size and MinBid the estimate.
func putCatalog(ctx context.Context, tab fleetnode.Tables, s lease.Store, repos []repogen.Repo, replicas int) error {
	return fleetnode.PutCatalog(ctx, tab, s, catalogOf(repos), replicas)
}

// catalogOf is the catalog of repos.
func catalogOf(repos []repogen.Repo) []fleetnode.CatalogEntry {
	out := make([]fleetnode.CatalogEntry, len(repos))
	for i, r := range repos {
		est := estimate(r)
		out[i] = fleetnode.CatalogEntry{Item: lease.Item{ID: r.ID, Commit: r.Commit, Size: est, MinBid: est}, URL: r.URL}
	}
	return out
}
