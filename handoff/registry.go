package handoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"
)

// registryPrefix is where a [Registry] keeps its assignments in the
// datastore: /handoff/assigned/<publisher> = the Continued peer ID's bytes
// (empty for a plain assignment).
const registryPrefix = "/handoff/assigned/"

// Assignment is one publisher assigned to this indexer, as GET
// /ingest/assigned lists it.
type Assignment struct {
	// Publisher is the assigned publisher.
	Publisher peer.ID
	// Continued is the frozen indexer this indexer took the publisher
	// over from by a handoff, or empty for a plain assignment.
	Continued peer.ID
}

// MarshalJSON encodes a as the reference does:
// {"Publisher":"12D3…","Continued":"12D3…"}, Continued omitted when empty.
func (a Assignment) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"Publisher":%q%s}`, a.Publisher.String(), continuedJSON(a.Continued)), nil
}

func continuedJSON(id peer.ID) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(`,"Continued":%q`, id.String())
}

// Registry is the persisted set of publishers assigned to this indexer:
// plain assignments (POST /ingest/assign, PUT /ingest/unassign) and
// handoffs, which record the frozen indexer they continue. It lives in
// the node's go-datastore (go-ds-leveldb on disk), so assignments survive
// restarts, and a rebuilding assigner finds every completed handoff
// through [Registry.Assignments].
//
// A Registry is safe for concurrent use; assignments of one publisher are
// serialised, and a publisher whose handoff is in progress counts as
// assigned.
type Registry struct {
	ds datastore.Datastore

	mu   sync.Mutex
	busy map[peer.ID]bool // handoffs in progress
}

// NewRegistry returns a Registry kept in ds. It reads nothing until used.
func NewRegistry(ds datastore.Datastore) (*Registry, error) {
	if ds == nil {
		return nil, fmt.Errorf("%w: nil datastore", ErrInvalidOption)
	}
	return &Registry{ds: ds, busy: make(map[peer.ID]bool)}, nil
}

func registryKey(publisher peer.ID) datastore.Key {
	return datastore.RawKey(registryPrefix + publisher.String())
}

// Assign records a plain assignment of publisher. It returns
// [ErrAlreadyAssigned] if publisher is assigned already (or its handoff
// is in progress). It checks neither the policy nor the frozen state:
// [Receiver.Assign] does.
func (r *Registry) Assign(ctx context.Context, publisher peer.ID) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("%w: publisher: %v", ErrInvalidRequest, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkFreeLocked(ctx, publisher); err != nil {
		return err
	}
	if err := r.ds.Put(ctx, registryKey(publisher), nil); err != nil {
		return fmt.Errorf("handoff: assign %s: %w", publisher, err)
	}
	return r.sync(ctx, publisher, "assign")
}

// Unassign deletes publisher's assignment, plain or handed off. It returns
// [ErrNotAssigned] if there is none. Stopping the publisher's ingestion is
// the caller's business.
func (r *Registry) Unassign(ctx context.Context, publisher peer.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := registryKey(publisher)
	switch ok, err := r.ds.Has(ctx, k); {
	case err != nil:
		return fmt.Errorf("handoff: unassign %s: %w", publisher, err)
	case !ok:
		return fmt.Errorf("%w: %s", ErrNotAssigned, publisher)
	}
	if err := r.ds.Delete(ctx, k); err != nil {
		return fmt.Errorf("handoff: unassign %s: %w", publisher, err)
	}
	return r.sync(ctx, publisher, "unassign")
}

// Assigned returns publisher's assignment and whether it has one. A
// handoff in progress is not an assignment yet.
func (r *Registry) Assigned(ctx context.Context, publisher peer.ID) (Assignment, bool, error) {
	v, err := r.ds.Get(ctx, registryKey(publisher))
	switch {
	case errors.Is(err, datastore.ErrNotFound):
		return Assignment{}, false, nil
	case err != nil:
		return Assignment{}, false, fmt.Errorf("handoff: read assignment of %s: %w", publisher, err)
	}
	a, err := decodeAssignment(publisher, v)
	if err != nil {
		return Assignment{}, false, err
	}
	return a, true, nil
}

// Assignments returns every assignment, sorted by publisher ID (the body
// of GET /ingest/assigned; the admin API answers 204 when it is empty).
func (r *Registry) Assignments(ctx context.Context) ([]Assignment, error) {
	res, err := r.ds.Query(ctx, query.Query{Prefix: strings.TrimSuffix(registryPrefix, "/")})
	if err != nil {
		return nil, fmt.Errorf("handoff: list assignments: %w", err)
	}
	defer res.Close()
	var out []Assignment
	for {
		e, ok := res.NextSync()
		if !ok {
			break
		}
		if e.Error != nil {
			return nil, fmt.Errorf("handoff: list assignments: %w", e.Error)
		}
		name, ok := strings.CutPrefix(e.Key, registryPrefix)
		if !ok {
			continue
		}
		pub, err := peer.Decode(name)
		if err != nil {
			return nil, fmt.Errorf("handoff: list assignments: bad key %q: %w", e.Key, err)
		}
		a, err := decodeAssignment(pub, e.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Assignment) int { return strings.Compare(string(a.Publisher), string(b.Publisher)) })
	return out, nil
}

func decodeAssignment(publisher peer.ID, v []byte) (Assignment, error) {
	a := Assignment{Publisher: publisher}
	if len(v) == 0 {
		return a, nil
	}
	id, err := peer.IDFromBytes(v)
	if err != nil {
		return Assignment{}, fmt.Errorf("handoff: assignment of %s: bad Continued: %w", publisher, err)
	}
	a.Continued = id
	return a, nil
}

// checkFreeLocked returns ErrAlreadyAssigned if publisher is assigned or
// being handed off.
func (r *Registry) checkFreeLocked(ctx context.Context, publisher peer.ID) error {
	if r.busy[publisher] {
		return fmt.Errorf("%w: %s (handoff in progress)", ErrAlreadyAssigned, publisher)
	}
	ok, err := r.ds.Has(ctx, registryKey(publisher))
	if err != nil {
		return fmt.Errorf("handoff: read assignment of %s: %w", publisher, err)
	}
	if ok {
		return fmt.Errorf("%w: %s", ErrAlreadyAssigned, publisher)
	}
	return nil
}

// reserve marks a handoff of publisher in progress, or returns
// ErrAlreadyAssigned. The caller calls release when done.
func (r *Registry) reserve(ctx context.Context, publisher peer.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkFreeLocked(ctx, publisher); err != nil {
		return err
	}
	r.busy[publisher] = true
	return nil
}

func (r *Registry) release(publisher peer.ID) {
	r.mu.Lock()
	delete(r.busy, publisher)
	r.mu.Unlock()
}

// commit persists the handed-off assignment of a reserved publisher.
func (r *Registry) commit(ctx context.Context, publisher, continued peer.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ds.Put(ctx, registryKey(publisher), []byte(continued)); err != nil {
		return fmt.Errorf("handoff: persist assignment of %s: %w", publisher, err)
	}
	return r.sync(ctx, publisher, "persist assignment of")
}

// sync makes the publisher's key durable on datastores that buffer
// writes (go-ds-leveldb writes through; Sync is then cheap).
func (r *Registry) sync(ctx context.Context, publisher peer.ID, op string) error {
	if err := r.ds.Sync(ctx, datastore.NewKey(registryPrefix)); err != nil {
		return fmt.Errorf("handoff: %s %s: sync: %w", op, publisher, err)
	}
	return nil
}
