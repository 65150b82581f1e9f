package piecenode

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/piece"
)

// Config is the typed configuration of a piece sampler. Start from
// [DefaultConfig]. A Config round-trips through encoding/json (durations
// in nanoseconds, prefixes as text) except the collaborators Store,
// WalkState, Key and Logger, which are not encoded.
type Config struct {
	// ProvidersURL is the IPNI /providers endpoint the sampler learns
	// providers and their heads from; "" disables polling (then only
	// Publishers and announces are walked).
	ProvidersURL string
	// PollInterval is how often ProvidersURL is read and Publishers are
	// asked for their head.
	PollInterval time.Duration
	// Publishers are HTTP publishers to walk besides those of
	// ProvidersURL: base URLs or multiaddrs.
	Publishers []string
	// Store keeps the sampled pieces; nil: an in-memory store of Capacity
	// payloads per piece, which the sampler owns (Close closes it). A
	// Store given here is the caller's to close.
	Store piece.Store `json:"-"`
	// Capacity is the payload CIDs the in-memory store keeps per
	// (provider, piece); 0 with a Store of the caller's (its own capacity
	// rules), else positive.
	Capacity int
	// WalkState keeps each publisher's verified addresses, backoff and
	// the sampler's claim name (piece.WithClaimOwner), and the walks'
	// positions when Store does not keep them (both piece backends do,
	// piece.Walks: several samplers on one Redis then share the walks,
	// each with its own WalkState). Nil: in memory; set only with a Store
	// of the caller's. The caller closes it.
	WalkState datastore.Batching `json:"-"`
	// EntryChunks is how many entry chunks of each advertisement are read
	// and sampled (piece.WithEntryChunks): the first, by default
	// (piece.DefaultEntryChunks), as the piece-indexer design has it; 0
	// reads every chunk (a uniform sample of all of an ad's payloads, at a
	// request per chunk).
	EntryChunks int
	// Key signs the API's answers; nil: a fresh Ed25519 key each New (see
	// piece.LoadOrCreateKey for one kept in a file).
	Key crypto.PrivKey `json:"-"`
	// Concurrency is how many publishers are walked at once.
	Concurrency int
	// RequestTimeout bounds every request to a publisher.
	RequestTimeout time.Duration
	// RequestRate is the requests a second to each publisher (0:
	// unlimited).
	RequestRate float64
	// AnnounceRate is how many announces a second one source IP may send
	// to PUT /announce, twice that at once; more get 429. 0: no limit.
	AnnounceRate float64
	// AnnounceRateExempt are the sources AnnounceRate does not limit.
	AnnounceRateExempt []netip.Prefix
	// AllowPrivateAddrs lets the sampler dial publishers on loopback,
	// private, link-local and CGNAT addresses (a private pool; by default
	// only public addresses are dialled, since /providers records and
	// announces name them). Cloud metadata addresses stay refused.
	AllowPrivateAddrs bool
	// ShutdownTimeout bounds how long requests in flight may take once
	// Run's context is done.
	ShutdownTimeout time.Duration
	// Logger receives the sampler's log; nil discards it.
	Logger *slog.Logger `json:"-"`
}

// DefaultConfig returns the defaults of the binary's flags: polling
// piece.DefaultProvidersURL every piece.DefaultPollInterval, an in-memory
// store of piece.DefaultCapacity, a fresh key, the piece package's
// walking defaults, the announce rate of the other roles and a 10s
// shutdown.
func DefaultConfig() Config {
	return Config{
		ProvidersURL:    piece.DefaultProvidersURL,
		PollInterval:    piece.DefaultPollInterval,
		Capacity:        piece.DefaultCapacity,
		Concurrency:     ingest.DefaultWorkers,
		RequestTimeout:  ingest.DefaultRequestTimeout,
		RequestRate:     piece.DefaultRequestRate,
		EntryChunks:     piece.DefaultEntryChunks,
		AnnounceRate:    netlimit.DefaultAnnounceRate,
		ShutdownTimeout: 10 * time.Second,
	}
}

// Validate returns an error naming the field of c at fault, the one [New]
// returns for it.
func (c Config) Validate() error {
	switch {
	case c.Store == nil && c.Capacity <= 0:
		return fmt.Errorf("Capacity %d must be positive with the in-memory store", c.Capacity)
	case c.Store != nil && c.Capacity != 0:
		return fmt.Errorf("Capacity %d: set only for the in-memory store (Store nil); a Store of yours keeps its own", c.Capacity)
	case c.Store == nil && c.WalkState != nil:
		return fmt.Errorf("WalkState without a Store: a kept walk position over the in-memory store would skip the ads walked before")
	case c.EntryChunks < 0:
		return fmt.Errorf("EntryChunks %d must not be negative", c.EntryChunks)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	}
	return netlimit.CheckRate("AnnounceRate", c.AnnounceRate)
}
