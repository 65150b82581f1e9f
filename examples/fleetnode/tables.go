package fleetnode

import (
	"context"
	"errors"
)

// ErrNoEntry is what Table.Get wraps for a key it does not hold.
var ErrNoEntry = errors.New("no such entry")

// Table is one of the fleet's side tables, kept beside the lease store's
// keys: string keys to string values. Node addresses, clone URLs,
// settings and handoffs are each a table (see Tables).
type Table interface {
	// Get returns the value of key, or an error wrapping ErrNoEntry.
	Get(ctx context.Context, key string) (string, error)
	// Set writes every entry; an empty map writes nothing.
	Set(ctx context.Context, entries map[string]string) error
	// Delete removes keys; a missing key is not an error.
	Delete(ctx context.Context, keys ...string) error
	// List returns every entry, read in bounded pages.
	List(ctx context.Context) (map[string]string, error)
	// Clear removes every entry.
	Clear(ctx context.Context) error
	// String names where the table lives, for messages.
	String() string
}

// Tables are the tables a fleet keeps beside its lease store.
type Tables struct {
	Addrs    Table // node name → HTTP address, written by each node
	Repos    Table // catalog item (a repo) → clone URL, written with the catalog
	Settings Table // setting → value: SettingMaxBids, SettingRehydrate
	Handoffs Table // item → "commit node": an index a stopping node offers (handoff.go)
}
