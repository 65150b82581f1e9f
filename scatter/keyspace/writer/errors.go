package writer

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrNoIndex is returned by the read side of the index (Get, All):
	// an ingest node holds no index; its multihashes live on the query
	// nodes, which a front end asks.
	ErrNoIndex = errors.New("writer: the index lives on the query nodes")
	// ErrInvalidConfig is wrapped by errors about a Config that cannot
	// work; they name the field.
	ErrInvalidConfig = errkind.New(errkind.InvalidOption, "writer: invalid config")
)
