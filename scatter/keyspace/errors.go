package keyspace

import "errors"

var (
	// ErrInvalidLayout is wrapped by errors about a [Layout] that breaks
	// its rules (see [Layout.Validate]) or a transition it cannot take.
	ErrInvalidLayout = errors.New("shard: invalid layout")
	// ErrInvalidBatch is wrapped by errors decoding a write batch.
	ErrInvalidBatch = errors.New("shard: invalid batch")
	// ErrStaleEpoch is wrapped by errors about a message routed under an
	// epoch the receiver no longer accepts.
	ErrStaleEpoch = errors.New("shard: stale epoch")
)
