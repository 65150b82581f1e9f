package querynode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// memberFile, in Config.Dir, records the last layout the node adopted:
// its epoch and whether it named the node. It is what tells a node that
// comes back into a layout after it left it that its store is stale.
const memberFile = "member"

// membership is the content of memberFile.
type membership struct {
	Epoch uint64
	Named bool
}

// loadMembership reads memberFile; ok is false when there is none (a new
// Dir, or one of before the file existed).
func loadMembership(dir string) (m membership, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, memberFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return membership{}, false, nil
	case err != nil:
		return membership{}, false, fmt.Errorf("%w: %w", ErrState, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return membership{}, false, fmt.Errorf("%w: %s: %w", ErrState, filepath.Join(dir, memberFile), err)
	}
	return m, true, nil
}

func saveMembership(dir string, m membership) error {
	b, _ := json.Marshal(m)
	if err := writeFileAtomic(filepath.Join(dir, memberFile), b); err != nil {
		return fmt.Errorf("%w: membership: %w", ErrState, err)
	}
	return nil
}

// rejoins reports whether adopting l after prev (the last layout adopted,
// when known) brings the node back into the layout after it left it, so
// that what its store holds is stale: l names it, and either prev did not
// (it left, or never was in), or l is a change in which it joins (on Next,
// not on Current) that began after prev, when it was in: it left in
// between, unseen (stopped while a coordinator removed it).
func rejoins(prev membership, known bool, l *keyspace.Layout, name string) bool {
	named := slices.ContainsFunc(l.Nodes, func(n keyspace.Node) bool { return n.Name == name })
	if !named || !known {
		return false
	}
	if !prev.Named {
		return true
	}
	if l.Phase == keyspace.PhaseStable || slices.Contains(l.Current, name) {
		return false
	}
	began := l.Epoch // the change's copy phase
	if l.Phase == keyspace.PhaseMoved {
		began--
	}
	return prev.Epoch < began
}

// cleanSlate empties the store (every key, every provider record) and
// forgets every writer position, for a node that comes back into the
// layout: no writer wrote to it while it was out, so anything it holds
// may have been removed or changed since, and the writers' queues to it
// were removed (they start new streams). The caller holds applyMu
// exclusively (or is New); cleanSlate holds commitMu, so that no commit
// saves a position it forgets. n.mu is not held. It returns the keys it
// removed one by one, or -1 when the store removed them all at once
// ([store.RangeRemover]).
func (n *Node) cleanSlate(ctx context.Context) (keys int64, err error) {
	n.commitMu.Lock()
	defer n.commitMu.Unlock()
	st := n.cfg.Store
	keys = -1
	if rr, ok := st.(store.RangeRemover); !ok {
		keys = 0
	} else if err := rr.RemoveRanges(ctx, store.Span{}); errors.Is(err, errors.ErrUnsupported) { // from the least form, no end: all
		keys = 0
	} else if err != nil {
		return 0, fmt.Errorf("querynode: empty the store: %w", err)
	}
	if keys == 0 {
		all := func(multihash.Multihash) bool { return true }
		if keys, err = removeWhere(ctx, st, st.All(ctx), "empty the store", all, func(remove func() error, _ int64) error { return remove() }); err != nil {
			return keys, err
		}
	}
	var ids []store.ProviderInfo
	for info, err := range st.Providers(ctx) {
		if err != nil {
			return keys, fmt.Errorf("querynode: empty the store: %w", err)
		}
		ids = append(ids, info)
	}
	for _, info := range ids {
		if err := st.DeleteProvider(ctx, info.AddrInfo.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return keys, fmt.Errorf("querynode: empty the store: %w", err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		return keys, fmt.Errorf("querynode: empty the store: flush: %w", err)
	}
	// The positions last: a crash before this point finds them and the
	// membership file as they were, and empties the store again.
	wd := filepath.Join(n.cfg.Dir, writersDir)
	if err := os.RemoveAll(wd); err != nil {
		return keys, fmt.Errorf("%w: forget writer positions: %w", ErrState, err)
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return keys, fmt.Errorf("%w: forget writer positions: %w", ErrState, err)
	}
	if err := syncDir(n.cfg.Dir); err != nil {
		return keys, fmt.Errorf("%w: forget writer positions: %w", ErrState, err)
	}
	n.mu.Lock()
	n.writers = map[string]*writer{}
	n.ready = false
	n.mu.Unlock()
	n.pending.Store(0)
	return keys, nil
}
