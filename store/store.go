package store

import (
	"context"
	"iter"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Index maps multihashes to provider values.
//
// Multihashes are compared by their bytes: the same digest under a CIDv0 and a
// CIDv1 of any codec is one entry. Every method validates its arguments before
// it writes anything, so a rejected call changes nothing.
type Index interface {
	// Put stores v for each of mhs. Putting a value that is already there is
	// a no-op. If the (provider, context) of v is already stored with other
	// metadata, the metadata is replaced for every multihash of that context.
	//
	// Put keeps no reference to v or mhs: the caller may reuse their memory
	// once it returns (an ingester decodes each entry chunk into memory it
	// reuses for the next).
	//
	// A large Put may be committed in several engine batches; if it fails
	// part-way, the multihashes that were written stay, and repeating the Put
	// completes it.
	//
	// Put does not need a provider record of v.ProviderID: the find API
	// (scatter/find's store backend) answers a value whose provider has
	// no record with the provider's ID and no addresses. Call PutProvider
	// as well so that find answers carry the provider's addresses and
	// extended providers.
	Put(ctx context.Context, v Value, mhs ...multihash.Multihash) error

	// Get returns the values of mh, or an empty slice and nil when there are
	// none. The returned slices are shared with the store and must not be
	// modified.
	Get(ctx context.Context, mh multihash.Multihash) ([]Value, error)

	// Remove removes the value of (provider, contextID) from each of mhs and
	// leaves the other multihashes of that context alone. Removing what is
	// not there is a no-op.
	Remove(ctx context.Context, provider peer.ID, contextID []byte, mhs ...multihash.Multihash) error

	// RemoveProviderContext removes the value of (provider, contextID) from
	// every multihash, in time independent of how many multihashes it covers.
	// Removing a context that is not there is a no-op.
	RemoveProviderContext(ctx context.Context, provider peer.ID, contextID []byte) error

	// RemoveProvider removes every value of provider, in time proportional to
	// its number of contexts, not multihashes. It does not delete the
	// provider's record; see [ProviderRecords.DeleteProvider].
	RemoveProvider(ctx context.Context, provider peer.ID) error

	// UpdateMetadata replaces the metadata of (provider, contextID) on every
	// multihash at once, in time independent of how many there are. It
	// returns an error wrapping [ErrNotFound] if the context is not stored.
	UpdateMetadata(ctx context.Context, provider peer.ID, contextID, metadata []byte) error
}

// ProviderRecords stores one [ProviderInfo] per provider.
type ProviderRecords interface {
	// PutProvider creates or replaces the record of info.AddrInfo.ID.
	PutProvider(ctx context.Context, info ProviderInfo) error
	// Provider returns the record of id, or an error wrapping [ErrNotFound].
	Provider(ctx context.Context, id peer.ID) (ProviderInfo, error)
	// Providers yields every record, in no particular order.
	Providers(ctx context.Context) iter.Seq2[ProviderInfo, error]
	// DeleteProvider deletes the record of id; deleting a missing record is
	// a no-op. It does not remove the provider's values.
	DeleteProvider(ctx context.Context, id peer.ID) error
}

// Entry is one multihash with its values, as yielded by [Store.All].
type Entry struct {
	Multihash multihash.Multihash
	Values    []Value
}

// Store is an index with its provider records: everything an indexer node
// keeps about content. Backends live in subpackages (memory, pebble, leveldb);
// all of them pass the suite in package storetest.
//
// A Store is safe for concurrent use. After Close every method returns an
// error wrapping [ErrClosed].
type Store interface {
	Index
	ProviderRecords

	// All yields every multihash with its values. Writes made during the
	// iteration may or may not be seen. The iteration stops at the first
	// error, which it yields with a zero Entry. A store keyed on digest
	// prefixes (store/pebble's WithDigestPrefixKeys) yields each
	// multihash in that form, [IndexKey] of what was put: compare through
	// IndexKey.
	All(ctx context.Context) iter.Seq2[Entry, error]

	// Size returns the bytes the store occupies: on disk for disk backends,
	// an estimate of memory held for in-memory ones. It is cheap enough to
	// poll.
	Size(ctx context.Context) (int64, error)

	// Flush makes every write that returned before it durable: a process
	// killed after Flush returns loses none of them.
	Flush(ctx context.Context) error

	// Close flushes, releases the store's resources and waits for calls in
	// flight. It is safe to call more than once.
	Close() error
}

// SeekScanner is implemented by stores that can read their index in byte
// order and skip parts of it: a caller that wants only some ranges of
// keys (a query node exporting the ranges another node gains) reads
// those, not the whole index.
type SeekScanner interface {
	// AllSeek yields what All yields, in ascending byte order of the
	// multihashes (in the form All yields them), calling seek with each
	// multihash before reading its values: seek returns nil to take the
	// entry, or bytes greater than the multihash to skip every entry
	// below them. seek's argument is valid only during the call. As with
	// Get, an entry's Values may be shared with the store and must not
	// be modified.
	AllSeek(ctx context.Context, seek func(mh []byte) []byte) iter.Seq2[Entry, error]
}

// RangeRemover is implemented by stores that can remove every index
// entry of a span of multihashes with one write, at a cost that does not
// grow with the entries removed (store/pebble writes range deletions):
// a query node drops the ring segments it no longer owns that way instead
// of removing their keys one by one.
type RangeRemover interface {
	// RemoveRanges removes, in one atomic write, every index entry whose
	// multihash lies in one of spans. A multihash lies in a span when
	// its form (the form All yields) followed by one zero byte is at
	// least Start and below End, bytewise. Value records stay, as a
	// Remove leaves them; writes that return after RemoveRanges returns
	// are kept, whatever their multihash.
	//
	// A store that cannot (one that keeps context populations, which a
	// range removal would leave naming multihashes the index no longer
	// holds, or whose engine deletes no ranges) returns an error wrapping
	// errors.ErrUnsupported and removes nothing; the caller removes key
	// by key instead.
	RemoveRanges(ctx context.Context, spans ...Span) error
}

// Span is the half-open range [Start, End) of multihash forms that
// [RangeRemover.RemoveRanges] removes; a nil End has no upper bound.
type Span struct {
	Start, End []byte
}

// Sweeper is implemented by stores that remove lazily. Removing a context
// (RemoveProviderContext, RemoveProvider) deletes only its one shared record,
// leaving index entries that point at nothing; Get skips them. Sweep deletes
// those entries and returns how many it removed. It may run alongside other
// calls, and can be stopped through ctx at any point without harm.
type Sweeper interface {
	Sweep(ctx context.Context) (removed int64, err error)
}
