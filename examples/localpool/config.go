package localpool

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// Defaults of [Config], in one place.
const (
	DefaultPublishers      = 4
	DefaultIndexers        = 3
	DefaultStore           = "pebble"
	DefaultReplication     = 1
	DefaultInterval        = time.Second
	DefaultEntries         = 100
	DefaultSeed            = 1
	DefaultPollInterval    = time.Second
	DefaultLookupTimeout   = 10 * time.Second
	DefaultDiskBudget      = 64 << 30 // every indexer but the one with FreezeBudget
	DefaultMaliciousMaxAds = 10
	// DefaultPieceContextEvery: every third new context of an honest
	// publisher names its Filecoin piece in its ContextID, as Curio does.
	DefaultPieceContextEvery = 3
	// DefaultFreezeBudget is the demo's budget of indexer-0: with the
	// default publishers (an ad of 100 multihashes a second each, two of
	// them on indexer-0) on Pebble, it grows by about 12 KiB a second and
	// freezes after about 40 s.
	DefaultFreezeBudget = 512 << 10
)

// Config is what [Start] runs. The zero value of a field means its
// default; only Dir is required.
type Config struct {
	// Dir holds every role's data directory: indexer-<i>/,
	// publishers/, malicious-<i>/, piece/. It is created if absent and
	// never removed by the pool.
	Dir string
	// Publishers is the number of honest generated publishers (default
	// 4), all in the role "publishers".
	Publishers int
	// Indexers is the number of indexer nodes at start (default 3),
	// roles "indexer-0", "indexer-1", ...
	Indexers int
	// Store is the indexers' index backend: "pebble" (default),
	// "leveldb" or "memory".
	Store string
	// Processes runs each role as its own OS process (the Executable
	// with the hidden "role" subcommand, see [ServeRole]) instead of in a
	// goroutine of this process.
	Processes bool
	// Executable is the program run in processes mode; it must call
	// rolemain.Run first thing in main (a test binary calls it in
	// TestMain). Default: os.Executable().
	Executable string
	// Replication is the number of indexers per publisher (default 1).
	Replication int
	// Sharded, when set, runs the keyspace-sharded layers: the indexers
	// ingest into query nodes instead of their own stores, and the front
	// end asks each key's owners (see [Sharded]).
	Sharded *Sharded
	// FreezeBudget, when positive, is the disk budget in bytes of
	// indexer-0 (its indexernode.Config.DiskBudget, freezing at 90% of
	// it), so that it freezes during the run and its publishers are
	// handed off. 0: no indexer freezes on its own.
	FreezeBudget int64
	// DiskBudget is the disk budget of every other indexer (default
	// 64 GiB): their usage is measured against it rather than the
	// machine's filesystem, so a full disk on the machine freezes
	// nothing, and PUT /freeze still works.
	DiskBudget int64
	// Interval is the time between two ads of each publisher (default
	// 1s); Entries the multihashes per ad (default 100); InitialAds the
	// ads each publisher has at a fresh start (default 1); MaxAds stops
	// producing at that many (0: never).
	Interval   time.Duration
	Entries    int
	InitialAds int
	MaxAds     int
	// RemoveEvery and UpdateEvery make every Nth ad of each honest
	// publisher a removal of an earlier context (IsRm) or a metadata
	// update of one (publishernode.Config.RemoveEvery, UpdateEvery).
	// 0: the publisher's defaults (every 10th and every 7th); negative:
	// never.
	RemoveEvery, UpdateEvery int
	// PieceContextEvery makes every Nth ad of each honest publisher that
	// starts a new context name its Filecoin piece in its ContextID, the
	// dag-cbor [size, pieceCID] of Curio
	// (publishernode.Config.PieceContextEvery), so that the piece sampler
	// answers for pieces named either way (most other ads name theirs in
	// graphsync metadata). 0: the default, 3; negative: never.
	PieceContextEvery int
	// Seed derives every publisher's identity and chain (default 1).
	Seed uint64
	// Malicious adds one faulty publisher per entry, role
	// "malicious-<i>", with its own seed; each stops producing at
	// MaliciousMaxAds (default 10; a huge ad holds about 7 MB).
	Malicious       []publishernode.Fault
	MaliciousMaxAds int
	// PollInterval is the assigner's status poll period (default 1s):
	// how soon a frozen indexer is seen and handed off.
	PollInterval time.Duration
	// LookupTimeout is the deadline of each lookup of [Pool.Check] and
	// [Pool.WaitComplete] (default DefaultLookupTimeout). A lookup that
	// passes it is retried while the check's context lasts, and one that
	// never got an answer is counted in Check.TimedOut, apart from the
	// wrong answers: a slow front end (a loaded machine), not a wrong one.
	LookupTimeout time.Duration
	// Log receives the roles' log lines at LogLevel and above, each
	// prefixed with role=<name>; nil discards them.
	Log      io.Writer
	LogLevel slog.Level
	// Logger is the pool's own log (roles started, stopped, killed); nil
	// discards it.
	Logger *slog.Logger
}

// withDefaults returns c with the defaults filled in, validated.
func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		return c, fmt.Errorf("%w: Dir is required", ErrConfig)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Publishers, DefaultPublishers)
	def(&c.Indexers, DefaultIndexers)
	def(&c.Replication, DefaultReplication)
	def(&c.Entries, DefaultEntries)
	def(&c.InitialAds, 1)
	def(&c.MaliciousMaxAds, DefaultMaliciousMaxAds)
	def(&c.PieceContextEvery, DefaultPieceContextEvery)
	if c.Store == "" {
		c.Store = DefaultStore
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.DiskBudget == 0 {
		c.DiskBudget = DefaultDiskBudget
	}
	if c.LookupTimeout == 0 {
		c.LookupTimeout = DefaultLookupTimeout
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if c.Store != "pebble" && c.Store != "leveldb" && c.Store != "memory" {
		errs = append(errs, fmt.Errorf("Store %q: want pebble, leveldb or memory", c.Store))
	}
	if c.Publishers < 0 || c.Indexers < 0 || c.Replication < 0 || c.Entries < 0 || c.InitialAds < 0 || c.MaxAds < 0 {
		errs = append(errs, errors.New("Publishers, Indexers, Replication, Entries, InitialAds and MaxAds must not be negative"))
	}
	if c.Interval < 0 || c.PollInterval < 0 || c.FreezeBudget < 0 || c.DiskBudget < 0 || c.LookupTimeout < 0 {
		errs = append(errs, errors.New("Interval, PollInterval, FreezeBudget, DiskBudget and LookupTimeout must not be negative"))
	}
	if c.Sharded != nil {
		sc := *c.Sharded
		if err := sc.withDefaults(); err != nil {
			errs = append(errs, err)
		}
		c.Sharded = &sc
	}
	if c.Replication > c.Indexers {
		errs = append(errs, fmt.Errorf("Replication %d exceeds Indexers %d", c.Replication, c.Indexers))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, nil
}
