package querynode

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// guard is the copy guard of one PhaseCopy epoch: what live batches did to
// the state a copy brings, so that a copied Put, which may come from a
// snapshot older than a live write, never undoes that write.
//
// The reasoning behind each rule: the node gaining a key is one of its
// write owners for the whole phase, so every write to that key made after
// the phase began reaches it live; and context-wide operations reach every
// node. Hence, once a live operation has removed something, whatever
// exists of it later was written live too, and a copied Put of it can only
// be stale:
//
//   - a live Remove of (mh, provider, context) tombstones it: copied Puts of
//     it are skipped for the rest of the phase, even if a live Put brings it
//     back (that Put arrived live; a copy of it adds nothing but risk);
//   - a live RemoveProviderContext removes the context, and a live
//     RemoveProvider the provider, from every copied Put, for the same
//     reason, even after the context is put again live;
//   - a live Put or UpdateMetadata sets the latest metadata of its
//     context; a copied Put of that context carries it instead of its own,
//     because a store's Put replaces the metadata of a whole context and a
//     stale copy would otherwise revert the update;
//   - a live PutProvider or DeleteProvider makes copied records of that
//     provider stale: they are skipped.
//
// Live operations and copied Puts are applied under mu, one at a time, so
// either a copied Put lands first and the live operation then acts on it,
// or the live operation is recorded first and the copy obeys it.
type guard struct {
	mu    sync.Mutex
	epoch uint64
	tomb  map[string]struct{} // tombKey
	ctxs  map[string]struct{} // ctxKey
	provs map[peer.ID]struct{}
	meta  map[string][]byte // ctxKey -> metadata
	recs  map[peer.ID]struct{}
	// rms lists the tombstones in the order they were recorded, for a
	// copy by tables to re-check at ingest those recorded after it
	// gathered (see tableCopy.commit). It adds no rule.
	rms []tomb

	path    string
	f       *os.File
	size    int64  // bytes of whole records in f
	pending []byte // records not yet written
}

// tomb is one tombstone: a live Remove of mh from (p, c).
type tomb struct {
	p  peer.ID
	c  []byte
	mh multihash.Multihash
}

// guardRec is one line of the guard's log.
type guardRec struct {
	K string   // "rm", "rc", "rp", "md", "pr"
	P []byte   // provider
	C []byte   `json:",omitempty"` // context
	D []byte   `json:",omitempty"` // metadata (md)
	H [][]byte `json:",omitempty"` // multihashes (rm)
}

func guardPath(dir string, epoch uint64) string {
	return filepath.Join(dir, fmt.Sprintf("guard-%d.log", epoch))
}

func ctxKey(p peer.ID, c []byte) string {
	b := binary.AppendUvarint(nil, uint64(len(p)))
	b = append(b, p...)
	return string(append(b, c...))
}

func tombKey(p peer.ID, c []byte, mh multihash.Multihash) string {
	b := binary.AppendUvarint(nil, uint64(len(p)))
	b = append(b, p...)
	b = binary.AppendUvarint(b, uint64(len(c)))
	b = append(b, c...)
	// Compare multihashes as a store keyed on digest prefixes keeps them:
	// a copy from such a store carries the prefix form.
	return string(store.AppendIndexKey(b, mh))
}

// openGuard opens (creating or replaying) the guard of epoch in dir and
// removes the guards of other epochs.
func openGuard(dir string, epoch uint64) (*guard, error) {
	if err := removeGuards(dir, epoch); err != nil {
		return nil, err
	}
	g := &guard{
		epoch: epoch,
		tomb:  map[string]struct{}{},
		ctxs:  map[string]struct{}{},
		provs: map[peer.ID]struct{}{},
		meta:  map[string][]byte{},
		recs:  map[peer.ID]struct{}{},
		path:  guardPath(dir, epoch),
	}
	f, err := os.OpenFile(g.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: copy guard: %w", ErrState, err)
	}
	n, err := g.replay(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: copy guard %s: %w", ErrState, g.path, err)
	}
	// Cut a torn last record (a crash mid-append, never acknowledged).
	if err := f.Truncate(n); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: copy guard: %w", ErrState, err)
	}
	if _, err := f.Seek(n, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: copy guard: %w", ErrState, err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: copy guard: %w", ErrState, err)
	}
	g.f, g.size = f, n
	return g, nil
}

// replay applies the log in r and returns the length of its whole records.
// Only the last line may be torn (no newline); any other bad line is an
// error.
func (g *guard) replay(r io.Reader) (int64, error) {
	br := bufio.NewReader(r)
	var n int64
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return n, nil // b, if any, is a torn record
		}
		if err != nil {
			return 0, err
		}
		var rec guardRec
		if err := json.Unmarshal(b, &rec); err != nil {
			return 0, fmt.Errorf("line %d: %w", line, err)
		}
		if err := g.record(&rec); err != nil {
			return 0, fmt.Errorf("line %d: %w", line, err)
		}
		n += int64(len(b))
	}
}

// record applies one record to the guard's maps.
func (g *guard) record(rec *guardRec) error {
	p := peer.ID(rec.P)
	if p == "" {
		return errors.New("record without a provider")
	}
	switch rec.K {
	case "rm":
		for _, mh := range rec.H {
			if err := store.ValidateMultihash(mh); err != nil {
				return err
			}
			g.tomb[tombKey(p, rec.C, mh)] = struct{}{}
			g.rms = append(g.rms, tomb{p, bytes.Clone(rec.C), bytes.Clone(mh)})
		}
	case "rc":
		g.ctxs[ctxKey(p, rec.C)] = struct{}{}
	case "rp":
		g.provs[p] = struct{}{}
	case "md":
		g.meta[ctxKey(p, rec.C)] = bytes.Clone(rec.D)
	case "pr":
		g.recs[p] = struct{}{}
	default:
		return fmt.Errorf("unknown record kind %q", rec.K)
	}
	return nil
}

// observe records what the live op does, in memory and in the pending log.
// The caller holds g.mu.
func (g *guard) observe(op *keyspace.Op) {
	v := op.Value
	rec := guardRec{P: []byte(v.ProviderID), C: v.ContextID}
	switch op.Kind {
	case keyspace.OpRemove:
		rec.K = "rm"
		rec.H = make([][]byte, len(op.Multihashes))
		for i, mh := range op.Multihashes {
			rec.H[i] = mh
		}
	case keyspace.OpRemoveContext:
		rec.K = "rc"
	case keyspace.OpRemoveProvider:
		rec.K, rec.C = "rp", nil
	case keyspace.OpPut, keyspace.OpUpdateMetadata:
		rec.K, rec.D = "md", v.Metadata
		if md, ok := g.meta[ctxKey(v.ProviderID, v.ContextID)]; ok && bytes.Equal(md, v.Metadata) {
			return // nothing new
		}
	case keyspace.OpPutProvider:
		rec.K, rec.P, rec.C = "pr", []byte(op.Provider.AddrInfo.ID), nil
	case keyspace.OpDeleteProvider:
		rec.K, rec.C = "pr", nil
	default:
		return
	}
	if err := g.record(&rec); err != nil {
		return // cannot happen for a decoded op
	}
	b, _ := json.Marshal(&rec)
	g.pending = append(append(g.pending, b...), '\n')
}

// sync writes and syncs the pending records. The caller holds g.mu.
func (g *guard) sync() error {
	if len(g.pending) == 0 {
		return nil
	}
	if _, err := g.f.Write(g.pending); err != nil {
		// Drop what may be half written, so that the log stays whole.
		g.f.Truncate(g.size)
		g.f.Seek(g.size, io.SeekStart)
		return fmt.Errorf("%w: copy guard: %w", ErrState, err)
	}
	if err := g.f.Sync(); err != nil {
		return fmt.Errorf("%w: copy guard: %w", ErrState, err)
	}
	g.size += int64(len(g.pending))
	g.pending = g.pending[:0]
	return nil
}

// filterPut returns the copied Put op as the guard lets it apply: without
// its tombstoned multihashes, with the live metadata of its context; ok is
// false when nothing of it applies. The caller holds g.mu.
func (g *guard) filterPut(op keyspace.Op) (keyspace.Op, bool) {
	v := op.Value
	if _, ok := g.provs[v.ProviderID]; ok {
		return op, false
	}
	ck := ctxKey(v.ProviderID, v.ContextID)
	if _, ok := g.ctxs[ck]; ok {
		return op, false
	}
	if md, ok := g.meta[ck]; ok {
		op.Value.Metadata = md
	}
	if len(g.tomb) > 0 {
		keep := op.Multihashes[:0:0]
		for _, mh := range op.Multihashes {
			if _, dead := g.tomb[tombKey(v.ProviderID, v.ContextID, mh)]; !dead {
				keep = append(keep, mh)
			}
		}
		op.Multihashes = keep
	}
	return op, len(op.Multihashes) > 0
}

// skipRecord reports whether a copied provider record is stale.
func (g *guard) skipRecord(p peer.ID) bool {
	_, ok := g.recs[p]
	return ok
}

// close closes the log file; discard also deletes it.
func (g *guard) close(discard bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.f == nil {
		return nil
	}
	err := g.f.Close()
	g.f = nil
	if discard {
		if rerr := os.Remove(g.path); rerr != nil && !os.IsNotExist(rerr) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// removeGuards deletes the guard logs in dir of every epoch but keep
// (0: all).
func removeGuards(dir string, keep uint64) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "guard-") || e.Name() == filepath.Base(guardPath(dir, keep)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("%w: %w", ErrState, err)
		}
	}
	return nil
}
