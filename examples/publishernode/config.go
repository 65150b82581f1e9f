package publishernode

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/indexkit/indexkit/ingest/schema"
)

// Config is the typed configuration of a [Node]: how many generated
// publishers it runs, what their chains are made of and how fast they
// grow. Start from [DefaultConfig]. A Config round-trips through
// encoding/json (durations in nanoseconds, Fault as its name) except
// Logger, which is not encoded.
type Config struct {
	// Publishers is how many publishers run, each with its own identity
	// and chain, each on its own listener (Listeners.Publishers).
	Publishers int
	// Seed, with a publisher's index, derives everything of it (see
	// [PublisherSeed]).
	Seed uint64
	// Interval is the time between two ads of each publisher.
	Interval time.Duration
	// InitialAds is how many ads each publisher has at a fresh start,
	// announced at once.
	InitialAds int
	// MaxAds stops producing once a publisher has that many ads (it
	// still serves them); 0: no limit.
	MaxAds int
	// Entries is the number of multihashes of each ad with entries.
	Entries int
	// ChunkSize is the number of multihashes per entry chunk (1 to
	// schema.MaxChunkEntries).
	ChunkSize int
	// RemoveEvery and UpdateEvery make every Nth ad a removal (IsRm) or a
	// metadata update of an earlier context (0: never).
	RemoveEvery, UpdateEvery int
	// PieceContextEvery makes every Nth ad that starts a new context name
	// its Filecoin piece in its ContextID (the dag-cbor [size, pieceCID]
	// Curio writes) rather than in graphsync metadata (0: never, the
	// default). See [Spec.PieceContextEvery].
	PieceContextEvery int
	// Announce are the base URLs to announce every new head to over HTTP
	// (an assigner's or indexers' announce listener; a URL without a path
	// gets /announce); none: no announces.
	Announce []string
	// Dir, when set, keeps the publishers' positions in [StateFile] so
	// that a restart continues the same chains; "" keeps nothing.
	Dir string
	// Fault makes every publisher misbehave: "" (none), bad-signature,
	// corrupt or huge. See [Fault].
	Fault Fault
	// ShutdownTimeout bounds how long requests in flight may take once
	// Run's context is done.
	ShutdownTimeout time.Duration
	// Logger receives the node's log; nil discards it.
	Logger *slog.Logger `json:"-"`
}

// DefaultConfig returns the defaults of the binary's flags: one honest
// publisher that publishes an ad of 100 multihashes a second, starting
// with one, with a removal every 10th ad and a metadata update every 7th,
// no announces, no state kept, and a 5s shutdown.
func DefaultConfig() Config {
	return Config{
		Publishers:      1,
		Seed:            1,
		Interval:        time.Second,
		InitialAds:      1,
		Entries:         100,
		ChunkSize:       100,
		RemoveEvery:     10,
		UpdateEvery:     7,
		ShutdownTimeout: 5 * time.Second,
	}
}

// Validate returns an error naming the field of c at fault, the one [New]
// returns for it.
func (c Config) Validate() error {
	switch {
	case c.Publishers < 1:
		return fmt.Errorf("Publishers %d: want at least 1", c.Publishers)
	case c.Interval <= 0:
		return fmt.Errorf("Interval %v must be positive", c.Interval)
	case c.InitialAds < 0 || c.MaxAds < 0:
		return fmt.Errorf("InitialAds %d and MaxAds %d must not be negative", c.InitialAds, c.MaxAds)
	case c.Entries < 1:
		return fmt.Errorf("Entries %d: want at least 1", c.Entries)
	case c.ChunkSize < 1 || c.ChunkSize > schema.MaxChunkEntries:
		return fmt.Errorf("ChunkSize %d: want 1 to %d", c.ChunkSize, schema.MaxChunkEntries)
	case c.RemoveEvery < 0 || c.UpdateEvery < 0:
		return fmt.Errorf("RemoveEvery %d and UpdateEvery %d must not be negative", c.RemoveEvery, c.UpdateEvery)
	case c.PieceContextEvery < 0:
		return fmt.Errorf("PieceContextEvery %d must not be negative", c.PieceContextEvery)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	}
	if err := c.Fault.validate(); err != nil {
		return fmt.Errorf("Fault: %w", err)
	}
	return nil
}

// Spec returns the [Spec] of publisher index of a node run with c,
// starting with ads ads: what [New] generates, so that a test can
// regenerate any publisher of a pool with [NewPublisher].
func (c Config) Spec(index, ads int) Spec {
	return Spec{Seed: PublisherSeed(c.Seed, index), Ads: ads, Entries: c.Entries, ChunkSize: c.ChunkSize,
		RemoveEvery: c.RemoveEvery, UpdateEvery: c.UpdateEvery, PieceContextEvery: c.PieceContextEvery, Fault: c.Fault}
}
