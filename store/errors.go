package store

import "errors"

var (
	// ErrNotFound is returned when a provider record or a (provider, context)
	// value does not exist.
	ErrNotFound = errors.New("store: not found")

	// ErrClosed is returned by every method of a store after Close.
	ErrClosed = errors.New("store: closed")

	// ErrInvalidValue is wrapped by errors that reject a [Value] (empty
	// provider, oversize context ID or metadata).
	ErrInvalidValue = errors.New("store: invalid value")

	// ErrInvalidMultihash is wrapped by errors that reject a multihash that
	// does not decode.
	ErrInvalidMultihash = errors.New("store: invalid multihash")
)

// ErrNotSampled is returned by [Sampler.Sample] for a context stored by an
// older version of a backend whose population the backend could not
// rebuild (store/pebble's WithDigestPrefixKeys keeps no whole
// multihashes to rebuild it from); putting the context again
// (re-ingesting it) does not help, removing and putting it again does.
var ErrNotSampled = errors.New("store: context has no population")
