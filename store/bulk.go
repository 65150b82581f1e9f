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

// BulkLoad gathers Puts and makes them visible all at once on Commit.
//
// What a load's Put does at once and what it defers is the contract a
// caller must reason with:
//
//   - the value's (provider, context) record is written at once, as Put
//     writes it: created if missing, its metadata replaced otherwise, so
//     the latest metadata written, by either path, is what Get answers;
//   - the index entries (which multihashes carry the value) are kept until
//     Commit, which writes them in one step, newer than every write that
//     returned before Commit began.
//
// Hence an entry a load brings back what was removed in between: a Remove
// of (provider, context, mh) that returns after the load's Put and before
// its Commit is undone by the Commit. A caller that must not undo such a
// removal orders it (querynode re-applies it after the Commit). A context
// removed in between (RemoveProviderContext, RemoveProvider) stays
// removed: its record is gone, records are never reused, and the loaded
// entries name the removed record, so Get never shows them.
type BulkLoad interface {
	// Put does what [Index.Put] does, deferring the index entries to
	// Commit (see above). It validates its arguments as Put does.
	Put(ctx context.Context, v Value, mhs ...multihash.Multihash) error
	// Len returns the number of (multihash, value) entries gathered since
	// the load began or last committed.
	Len() int
	// Commit writes the gathered entries, all visible at once, and starts
	// the load afresh. A Commit with nothing gathered does nothing. Like
	// Put, what it writes is durable once Flush returns.
	Commit(ctx context.Context) error
	// Close discards what was gathered and not committed and releases the
	// load. It is safe to call more than once.
	Close() error
}
