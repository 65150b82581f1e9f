package store

import (
	"context"

	"github.com/multiformats/go-multihash"
)

// BulkLoader is implemented by stores that can load many index entries at
// once far faster than Put does them one batch at a time: they gather the
// entries, write them in key order into one sorted table in the store's
// own key form, and hand the whole table to the engine (store/pebble
// ingests it with Pebble's DB.Ingest). A store that cannot, such as
// store/memory and store/leveldb, does not implement it; a caller finds
// it by type assertion and otherwise keeps to Put.
type BulkLoader interface {
	// NewBulkLoad starts a load. Loads may run side by side; each is used
	// by one goroutine at a time.
	NewBulkLoad(ctx context.Context) (BulkLoad, error)
}

// BulkLoad gathers Puts into tables that make them visible all at once.
//
// What a load's Put does at once and what it defers is the contract a
// caller must reason with:
//
//   - the value's (provider, context) record is written at once, as Put
//     writes it: created if missing, its metadata replaced otherwise, so
//     the latest metadata written, by either path, is what Get answers;
//   - the index entries (which multihashes carry the value) wait for the
//     Ingest of the table they were sealed into, which writes them in one
//     step, newer than every write that returned before Ingest began.
//
// Hence an Ingest brings back what was removed in between: a Remove of
// (provider, context, mh) that returns after the load's Put and before
// the Ingest is undone by it. A caller that must not undo such a removal
// orders it (querynode re-applies it after the Ingest). A context
// removed in between (RemoveProviderContext, RemoveProvider) stays
// removed: its record is gone, records are never reused, and the loaded
// entries name the removed record, so Get never shows them.
//
// A load and its tables are used by one goroutine at a time each; a table
// may be built and ingested on another goroutine while the load gathers
// the next one.
type BulkLoad interface {
	// Put does what [Index.Put] does, deferring the index entries to the
	// Ingest of the table they are sealed into. It validates its
	// arguments as Put does.
	Put(ctx context.Context, v Value, mhs ...multihash.Multihash) error
	// Len returns the number of (multihash, value) entries gathered since
	// the load began or was last sealed.
	Len() int
	// Seal hands what was gathered to a table of its own and starts the
	// load afresh. It is cheap: the costly part is the table's Build.
	Seal() BulkTable
	// Close discards what was gathered and not sealed and releases the
	// load. It is safe to call more than once.
	Close() error
}

// BulkTable is the sealed part of a [BulkLoad].
type BulkTable interface {
	// Len returns the number of (multihash, value) entries in the table.
	Len() int
	// Build turns the entries into the store's own keys, sorts them and
	// writes them apart from the store: nothing is visible yet.
	Build(ctx context.Context) error
	// Ingest makes the built table's entries visible all at once, newer
	// than every write that returned before Ingest began. It costs about
	// a file link and a manifest update, however large the table. Like
	// Put, what it writes is durable once Flush returns.
	Ingest(ctx context.Context) error
	// Close discards a table not ingested and releases its memory. It is
	// safe to call more than once.
	Close() error
}
