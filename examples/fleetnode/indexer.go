package fleetnode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/lease"
)

// errUnknownRepo is returned for an item without a clone URL.
var errUnknownRepo = errors.New("no clone URL for repo")

// repoIndex is the index of one repo at one commit.
type repoIndex struct {
	*codeindex.Index
	Commit string
	Built  time.Time
	Took   time.Duration
	// From says where the index came from: "git" (cloned and indexed),
	// "snapshot" (loaded from the snapshot directory) or "handoff"
	// (fetched from the node that held it, as it stopped).
	From string
}

// repoIndexer is the node's agent.Indexer: it shallow-clones a repo at the
// catalog's commit into a temporary directory, indexes its files in
// memory, deletes the clone, and keeps the index until Drop.
type repoIndexer struct {
	workDir string
	url     func(ctx context.Context, item string) (string, error)

	mu      sync.RWMutex
	indexes map[string]*repoIndex
	// gens counts, per item, the indexes installed and the drops: a
	// rebuild after corruption installs its index only if none came or
	// went while it built.
	gens map[string]uint64
	// broken holds the corrupted indexes whose rebuild failed, with the
	// generation it would install at: the next verify tries again.
	broken map[string]brokenIndex

	// credentialHelpers are added to the configured credential helpers
	// of every fetch (git -c credential.helper=…), in order.
	credentialHelpers []string

	// snaps, when set, is where built indexes are written and, while
	// rehydrate is on, loaded from instead of cloning. snapshotErr gets
	// every snapshot that failed to load (a corrupted one is removed and
	// the repo indexed from git) or to be written; loaded tells whether it
	// was a load.
	snaps       *codeindex.Dir
	rehydrate   atomic.Bool
	snapshotErr func(item string, loading bool, err error)
	// handoff, when set and rehydrate is on, fetches the index a stopping
	// node offers (handoff.go); fs.ErrNotExist when none does.
	handoff func(ctx context.Context, item, commit string) (*codeindex.Index, error)
}

type brokenIndex struct {
	commit string
	gen    uint64
}

func newRepoIndexer(workDir string, url func(context.Context, string) (string, error)) *repoIndexer {
	return &repoIndexer{workDir: workDir, url: url, indexes: make(map[string]*repoIndex), gens: make(map[string]uint64), broken: make(map[string]brokenIndex)}
}

// Index implements agent.Indexer.
func (x *repoIndexer) Index(ctx context.Context, row lease.Row) (int64, error) {
	ri, err := x.build(ctx, row)
	if err != nil {
		return 0, err
	}
	x.mu.Lock()
	x.indexes[row.ID] = ri
	x.gens[row.ID]++
	x.mu.Unlock()
	return ri.Size(), nil
}

// build clones row's repo at its commit and indexes it.
func (x *repoIndexer) build(ctx context.Context, row lease.Row) (*repoIndex, error) {
	start := time.Now()
	if row.Commit == "" {
		return nil, fmt.Errorf("index %s: the catalog row has no commit", row.ID)
	}
	repo, _ := lease.SplitReplicaID(row.ID) // replicas share their repo's snapshot
	if x.handoff != nil && x.rehydrate.Load() {
		ix, err := x.handoff(ctx, row.ID, row.Commit)
		if err == nil {
			return &repoIndex{Index: ix, Commit: row.Commit, Built: time.Now(), Took: time.Since(start), From: "handoff"}, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			x.reportSnapshot(row.ID, true, err)
		}
	}
	if x.snaps != nil && x.rehydrate.Load() {
		ix, err := x.snaps.Load(repo, row.Commit)
		if err == nil {
			return &repoIndex{Index: ix, Commit: row.Commit, Built: time.Now(), Took: time.Since(start), From: "snapshot"}, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			x.reportSnapshot(row.ID, true, err)
		}
	}
	url, err := x.url(ctx, row.ID)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", row.ID, err)
	}
	ix, err := x.cloneAndIndex(ctx, row.ID, url, row.Commit)
	if err != nil {
		return nil, err
	}
	if x.snaps != nil {
		if err := x.snaps.Store(repo, row.Commit, ix); err != nil {
			x.reportSnapshot(row.ID, false, err)
		}
	}
	return &repoIndex{Index: ix, Commit: row.Commit, Built: time.Now(), Took: time.Since(start), From: "git"}, nil
}

func (x *repoIndexer) reportSnapshot(item string, loading bool, err error) {
	if x.snapshotErr != nil {
		x.snapshotErr(item, loading, err)
	}
}

// verify checks every index against the checksum taken when it was
// built (Index.Verify). A corrupted index is dropped at once, so that it
// never answers again, reported to corrupt, and rebuilt at its commit;
// the rebuilt index goes in only if the item's index did not change
// meanwhile (the manager dropped it, or indexed a new commit). verify
// returns the number of corrupted indexes it found. A rebuild that failed
// is tried again at the next verify, for as long as the index stays
// unchanged.
func (x *repoIndexer) verify(ctx context.Context, corrupt func(item, commit string, err error), rebuilt func(item string, err error)) int {
	x.mu.RLock()
	all := make(map[string]*repoIndex, len(x.indexes))
	for item, ri := range x.indexes {
		all[item] = ri
	}
	retry := make(map[string]brokenIndex, len(x.broken))
	for item, b := range x.broken {
		retry[item] = b
	}
	x.mu.RUnlock()
	for item, b := range retry {
		rebuilt(item, x.rebuild(ctx, item, b))
	}
	found := 0
	for item, ri := range all {
		if ctx.Err() != nil {
			break
		}
		err := ri.Verify()
		if err == nil {
			continue
		}
		x.mu.Lock()
		if x.indexes[item] != ri {
			x.mu.Unlock()
			continue // replaced or dropped while it was checked
		}
		delete(x.indexes, item)
		x.gens[item]++
		gen := x.gens[item]
		x.mu.Unlock()
		found++
		corrupt(item, ri.Commit, err)
		rebuilt(item, x.rebuild(ctx, item, brokenIndex{commit: ri.Commit, gen: gen}))
	}
	return found
}

// rebuild builds item's index at b.commit again and installs it if the
// item's generation is still b.gen; if the build fails, it keeps b in
// broken for the next verify.
func (x *repoIndexer) rebuild(ctx context.Context, item string, b brokenIndex) error {
	fresh, err := x.build(ctx, lease.Row{Item: lease.Item{ID: item, Commit: b.commit}})
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.gens[item] != b.gen:
		delete(x.broken, item)
		if err == nil {
			err = errors.New("the index changed while it was rebuilt: the rebuilt one is not used")
		}
		return err
	case err != nil:
		x.broken[item] = b
		return err
	}
	delete(x.broken, item)
	x.indexes[item] = fresh
	x.gens[item]++
	return nil
}

// cloneAndIndex fetches commit of url, with depth 1, into a temporary
// directory, checks the checked-out commit, and indexes the tree.
func (x *repoIndexer) cloneAndIndex(ctx context.Context, item, url, commit string) (*codeindex.Index, error) {
	dir, err := os.MkdirTemp(x.workDir, "clone-")
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", item, err)
	}
	defer os.RemoveAll(dir)
	fetch := []string{"-C", dir}
	for _, h := range x.credentialHelpers {
		fetch = append(fetch, "-c", "credential.helper="+h)
	}
	steps := [][]string{
		{"init", "-q", dir},
		append(fetch, "fetch", "-q", "--depth", "1", "--no-tags", url, commit),
		{"-C", dir, "-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD"},
	}
	for _, args := range steps {
		if _, err := fetchGit(ctx, args...); err != nil {
			return nil, fmt.Errorf("index %s: %w", item, err)
		}
	}
	out, err := fetchGit(ctx, "-C", dir, "rev-parse", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", item, err)
	}
	if got := strings.TrimSpace(string(out)); got != commit {
		return nil, fmt.Errorf("index %s: checked out %s, the catalog says %s", item, got, commit)
	}
	return codeindex.FromDir(dir)
}

// Drop implements agent.Indexer.
func (x *repoIndexer) Drop(item string) {
	x.mu.Lock()
	delete(x.indexes, item)
	x.gens[item]++
	x.mu.Unlock()
}

// get returns the index of item, or nil.
func (x *repoIndexer) get(item string) *repoIndex {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.indexes[item]
}
