package chaingen

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrNotFound is wrapped by [Chain.Block] and [Source.Block] for a CID
	// the chain holds no block for (never generated, or dropped with
	// [Chain.RemoveBlock]).
	ErrNotFound = errors.New("chaingen: block not found")

	// ErrInvalidConfig is wrapped by [Generate] and [Chain.Extend] for a
	// [Config] they cannot honour; the message names the field.
	ErrInvalidConfig = errkind.New(errkind.InvalidOption, "chaingen: invalid config")

	// ErrMismatch is wrapped by [Model.Equal] when a store does not hold
	// exactly the model's entries.
	ErrMismatch = errors.New("chaingen: store differs from model")
)
