package store

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrNotFound is returned when a provider record or a (provider, context)
	// value does not exist.
	ErrNotFound = errors.New("store: not found")

	// ErrClosed is returned by every method of a store after Close.
	ErrClosed = errkind.New(errkind.Closed, "store: closed")

	// ErrInvalidValue is wrapped by errors that reject a [Value] (empty
	// provider, oversize context ID or metadata).
	ErrInvalidValue = errors.New("store: invalid value")

	// ErrInvalidMultihash is wrapped by errors that reject a multihash that
	// does not decode.
	ErrInvalidMultihash = errors.New("store: invalid multihash")
)

// ErrNotSampled is returned by [Sampler.Sample] for a context whose
// population the store does not keep: one stored by an older version of a
// backend that could not rebuild it (store/pebble's WithDigestPrefixKeys
// keeps no whole multihashes to rebuild it from), or by a store opened
// without populations (store/pebble's and store/leveldb's
// WithoutPopulations). Putting the context again (re-ingesting it) does
// not help; removing it and putting it again, in a store that keeps
// populations, does.
var ErrNotSampled = errors.New("store: context has no population")

// ErrNotCounted is returned by a backend's CountEntries when the index
// holds more multihashes than it counts exactly (a count would scan the
// whole index): the caller falls back to an estimate and says so.
var ErrNotCounted = errors.New("store: too many entries to count exactly")
