package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ReplicaSep separates an item's ID from its replica slot number in the ID
// of a replica slot (see [ReplicaID]). [PutReplicated] refuses item IDs
// that contain it, so a slot ID never collides with another item's ID.
const ReplicaSep = "#"

// ReplicaID returns the catalog ID of replica slot slot of item. Slot 0 is
// the primary, whose ID is item itself; slot k > 0 is item + ReplicaSep +
// k, e.g. "repo-1#1". A slot below 0 reads as 0.
//
// Replication is N catalog items per item: each slot is leased, auctioned
// and indexed on its own, and lease/agent's Manager with WithReplication
// never holds two slots of one item, so the N copies live on N different
// nodes.
func ReplicaID(item string, slot int) string {
	if slot <= 0 {
		return item
	}
	return item + ReplicaSep + strconv.Itoa(slot)
}

// SplitReplicaID is the inverse of [ReplicaID]: it returns the item and
// slot an ID names. An ID without a well-formed slot suffix (ReplicaSep and
// a positive decimal number without leading zeros) is slot 0 of itself.
func SplitReplicaID(id string) (item string, slot int) {
	i := strings.LastIndex(id, ReplicaSep)
	if i <= 0 {
		return id, 0
	}
	num := id[i+len(ReplicaSep):]
	k, err := strconv.Atoi(num)
	if err != nil || k <= 0 || strconv.Itoa(k) != num {
		return id, 0
	}
	return id[:i], k
}

// PutReplicated puts it and its replica slots 1..n-1 in the catalog (n
// copies in all; n = 1 is a plain [Store.Put]). Every slot row gets the same
// Commit, Size, MaxBids and MinBid. It fails with [ErrInvalid] if n < 1 or
// it.ID contains [ReplicaSep]. Lowering n later leaves the higher slots in
// the catalog: the Store interface has no delete.
func PutReplicated(ctx context.Context, s Store, it Item, n int) error {
	if n < 1 {
		return fmt.Errorf("lease: put %q with %d copies: %w", it.ID, n, ErrInvalid)
	}
	if strings.Contains(it.ID, ReplicaSep) {
		return fmt.Errorf("lease: put %q: replicated item ID contains %q: %w", it.ID, ReplicaSep, ErrInvalid)
	}
	for k := range n {
		slot := it
		slot.ID = ReplicaID(it.ID, k)
		if err := s.Put(ctx, slot); err != nil {
			return fmt.Errorf("lease: put replica %d of %q: %w", k, it.ID, err)
		}
	}
	return nil
}

// Replicas returns the rows of item's n slots, in slot order: the primary
// first. A missing slot fails the call with an error wrapping
// [ErrNotFound]. [Serving] picks the row to read from.
func Replicas(ctx context.Context, s Store, item string, n int) ([]Row, error) {
	if n < 1 {
		return nil, fmt.Errorf("lease: replicas of %q, %d copies: %w", item, n, ErrInvalid)
	}
	rows := make([]Row, 0, n)
	var errs []error
	for k := range n {
		r, err := s.Get(ctx, ReplicaID(item, k))
		if err != nil {
			errs = append(errs, fmt.Errorf("lease: replica %d of %q: %w", k, item, err))
			continue
		}
		rows = append(rows, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rows, nil
}

// Serving returns the first row of rows whose owner serves it (Ready,
// with an owner): with the rows of [Replicas], the primary if it is ready,
// else the first ready replica. ok is false when no copy is ready.
func Serving(rows []Row) (r Row, ok bool) {
	for _, r := range rows {
		if r.Ready && r.Owner != "" {
			return r, true
		}
	}
	return Row{}, false
}
