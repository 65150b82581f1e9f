package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// errUnknownRepo is returned for an item without a clone URL.
var errUnknownRepo = errors.New("no clone URL for repo")

// repoIndex is the index of one repo at one commit.
type repoIndex struct {
	*Index
	Commit string
	Built  time.Time
	Took   time.Duration
}

// repoIndexer is the node's agent.Indexer: it shallow-clones a repo at the
// catalog's commit into a temporary directory, indexes its files in
// memory, deletes the clone, and keeps the index until Drop.
type repoIndexer struct {
	workDir string
	url     func(ctx context.Context, item string) (string, error)

	mu      sync.RWMutex
	indexes map[string]*repoIndex
}

func newRepoIndexer(workDir string, url func(context.Context, string) (string, error)) *repoIndexer {
	return &repoIndexer{workDir: workDir, url: url, indexes: make(map[string]*repoIndex)}
}

// Index implements agent.Indexer.
func (x *repoIndexer) Index(ctx context.Context, row lease.Row) (int64, error) {
	start := time.Now()
	if row.Commit == "" {
		return 0, fmt.Errorf("index %s: the catalog row has no commit", row.ID)
	}
	url, err := x.url(ctx, row.ID)
	if err != nil {
		return 0, fmt.Errorf("index %s: %w", row.ID, err)
	}
	ix, err := x.cloneAndIndex(ctx, row.ID, url, row.Commit)
	if err != nil {
		return 0, err
	}
	ri := &repoIndex{Index: ix, Commit: row.Commit, Built: time.Now(), Took: time.Since(start)}
	x.mu.Lock()
	x.indexes[row.ID] = ri
	x.mu.Unlock()
	return ix.Size(), nil
}

// cloneAndIndex fetches commit of url, with depth 1, into a temporary
// directory, checks the checked-out commit, and indexes the tree.
func (x *repoIndexer) cloneAndIndex(ctx context.Context, item, url, commit string) (*Index, error) {
	dir, err := os.MkdirTemp(x.workDir, "clone-")
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", item, err)
	}
	defer os.RemoveAll(dir)
	steps := [][]string{
		{"init", "-q", dir},
		{"-C", dir, "fetch", "-q", "--depth", "1", "--no-tags", url, commit},
		{"-C", dir, "-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD"},
	}
	for _, args := range steps {
		if _, err := git(ctx, "", nil, args...); err != nil {
			return nil, fmt.Errorf("index %s: %w", item, err)
		}
	}
	out, err := git(ctx, "", nil, "-C", dir, "rev-parse", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", item, err)
	}
	if got := strings.TrimSpace(string(out)); got != commit {
		return nil, fmt.Errorf("index %s: checked out %s, the catalog says %s", item, got, commit)
	}
	return indexDir(dir)
}

// Drop implements agent.Indexer.
func (x *repoIndexer) Drop(item string) {
	x.mu.Lock()
	delete(x.indexes, item)
	x.mu.Unlock()
}

// get returns the index of item, or nil.
func (x *repoIndexer) get(item string) *repoIndex {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.indexes[item]
}
