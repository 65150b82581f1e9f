package indexernode

import (
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/internal/localonly"
	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
)

// Config is an indexer node's configuration. [DefaultConfig] gives the
// defaults of examples/indexer; the zero value of a field is not always
// its default, so start from DefaultConfig.
type Config struct {
	// Dir is the data directory: the identity key ([KeyFile]), the index
	// (unless Index is given), the state (walker positions, assignments: a
	// go-datastore on Pebble under Dir/state; a Dir/datastore in
	// go-ds-leveldb, as versions before kept it, is moved there at start)
	// and the freeze state. Created if missing. Required.
	Dir string `json:"Dir"`
	// Store names the index backend opened under Dir: "pebble", "leveldb"
	// or "memory" (whose index is lost when the node stops: at each start
	// the node drops the walk state of the last run with
	// [ingest.DropWalkState], logged at WARN, and keeps its assignments,
	// so that its publishers are walked again from the start of their
	// chains). Leave it empty when Index is set.
	Store string `json:"Store"`
	// Index, when set, is an index store of the caller's (any
	// [store.Store], such as one of the caller's backend): the node uses
	// it and does not close it.
	Index store.Store `json:"-"`
	// Shard, when set, makes the node an ingest node of the
	// keyspace-sharded layer: it indexes into the query nodes of a
	// layout (see [ShardConfig]), and Index must be nil.
	Shard *ShardConfig `json:"Shard"`
	// AdminToken, when set, is the bearer token the admin API requires.
	AdminToken string `json:"AdminToken"`
	// AdminHosts are the Host names, besides 127.0.0.0/8, [::1] and
	// localhost, that the admin API answers without a token (a name of
	// the node's own, a proxy's): host names or IP addresses without a
	// port ([admin.WithAllowedHosts]). Without a token any other Host is
	// refused 421 and a request a web page sent 403; with one the Host
	// is not checked.
	AdminHosts []string `json:"AdminHosts"`
	// HandoffFrom are the find URLs of the frozen indexers a handoff may
	// name as FrozenURL; HandoffFromFile is a file of them, one per line,
	// read at every handoff ([handoff.WithFrozenIndexersFile]; not with
	// HandoffFrom). Neither: any.
	HandoffFrom     []string `json:"HandoffFrom"`
	HandoffFromFile string   `json:"HandoffFromFile"`
	// P2P is the libp2p listen multiaddr (gossip announces and libp2p
	// publishers); "" disables libp2p.
	P2P string `json:"P2P"`
	// Topic is the gossip topic of announces, /indexer/ingest/<network>.
	Topic string `json:"Topic"`
	// FreezeAt is the disk usage, in percent, at which the node freezes;
	// negative disables freezing (0: 90).
	FreezeAt float64 `json:"FreezeAt"`
	// DiskBudget, when positive, is the disk the node may use, in bytes:
	// usage is then the bytes allocated to the files under Dir out of
	// DiskBudget ([freeze.Budget]), read every 1 to 5 s; a Pebble store
	// is sized to it ([pebble.WithDiskBudget]: memtables, preallocated
	// write-ahead logs and MANIFEST), and the state's Pebble to a quarter
	// of it.
	// 0: the filesystem's usage.
	DiskBudget int64 `json:"DiskBudget"`
	// IndexNoWAL writes a Pebble index without its write-ahead log
	// ([pebble.WithoutWAL]): writes reach the disk only as tables, at each
	// ingest checkpoint (which flushes the store before it records the
	// walk position), at the end of each walk, and when Pebble flushes a
	// full memtable, so a killed node loses the index writes since its
	// last checkpoint and applies those advertisements again from the
	// publishers' chains at the next start. The node then also flushes
	// the store after the writes no chain replays: the freeze snapshot,
	// an unfreeze, and the provider records a handoff registers. It
	// writes each multihash once instead of twice and keeps no log files
	// (some 70 MiB preallocated per log), which pays for bulk ingest of
	// long chains; but every checkpoint then writes a table, and with
	// many small walks (one advertisement per announce) the tables are
	// small and compacting each into the base level costs far more than
	// syncing a log: 2.6 times the CPU per multihash at 1,000 multihashes
	// per flush (see the Tuning section of store/pebble). Off by default.
	IndexNoWAL bool `json:"IndexNoWAL"`
	// IndexSampling keeps, beside a Pebble or LevelDB index, each
	// context's whole multihash set in order (a population), so that the
	// IPNI multihash-sampling API answers as its spec says: a sample
	// drawn from the context's full set, the same on every node that
	// holds it. It costs a second key per multihash: the tables take
	// about 64 bytes per sha2-256 multihash instead of 29, and ingest is a
	// third slower (see store/pebble's WithoutPopulations). Off (the
	// default), the sampling API answers 501 for the contexts it keeps no
	// population of; the memory store keeps them always. Turned on over
	// an existing index, it samples the contexts put from then on.
	IndexSampling bool `json:"IndexSampling"`
	// IndexFullKeys makes a new Pebble index key every multihash whole.
	// Off (the default), a new index keys a multihash of a cryptographic
	// hash with a longer digest on its code and first 20 bytes
	// ([pebble.WithDigestPrefixKeys]), 12 bytes less per sha2-256
	// multihash; find answers are the same. An existing index keeps the
	// layout it was created with.
	IndexFullKeys bool `json:"IndexFullKeys"`
	// IndexCacheSize is the Pebble index's block cache in bytes, the
	// most of the node's memory that grows with lookups (DefaultConfig:
	// 32 MiB; 0: the pebble package's 256 MiB, [pebble.WithCacheSize]).
	// Every block a find reads goes through it; the operating system's
	// page cache holds the files besides, so a larger cache saves
	// decoding more than disk reads.
	IndexCacheSize int64 `json:"IndexCacheSize"`
	// IndexLookupCache is the bytes of memory a Pebble or LevelDB index
	// spends on what lookups read of it, so that a multihash looked up
	// again (or found absent again) reads no table
	// ([pebble.WithLookupCache]; 0: the package's 8 MiB; negative: none).
	// It is exact: a write drops what it changes.
	IndexLookupCache int64 `json:"IndexLookupCache"`
	// AnswerCache is the bytes of memory the find API spends on JSON
	// answers kept ready over a Pebble or LevelDB index
	// ([find.WithAnswerCache]; 0: the package's 8 MiB; negative: none). A
	// kept answer is served while nothing it was built from has changed:
	// the multihash's entries, their records, the providers' addresses.
	AnswerCache int64 `json:"AnswerCache"`
	// IndexMemTableSize is the size in bytes of each of the Pebble
	// index's memtables (DefaultConfig: 32 MiB; 0: the pebble package's
	// 64 MiB, [pebble.WithMemTableSize]): ingest
	// fills one while the previous one is written out, so up to about
	// twice this is held while the node ingests. Larger memtables write
	// fewer, larger tables at level 0. A DiskBudget caps it at a 16th of
	// the budget.
	IndexMemTableSize int64 `json:"IndexMemTableSize"`
	// IndexRunSize, when positive, makes a Pebble index gather the
	// multihashes it indexes in memory, up to this many bytes, and hand
	// them to Pebble as one sorted table, bypassing the memtable and the
	// write-ahead log ([pebble.WithSortedRuns]); finds see every write at
	// once. Inserting random keys into a memtable is most of what indexing
	// costs, so this halves the CPU per multihash of a bulk ingest. A
	// killed node loses the index writes since its last ingest checkpoint
	// (the walker flushes the store before it records a position) and
	// applies those advertisements again from the publishers' chains, as
	// with IndexNoWAL; records and provider information still go through
	// the log. A checkpoint that finds less than a quarter of a run
	// gathered commits it through the memtable, as without runs, so many
	// small walks cost what they cost without them. Up to about twice
	// this is held while a full run is written (DefaultConfig: 32 MiB;
	// 0: off). A DiskBudget caps it at a 16th of the budget, and turns
	// runs off below 1 MiB.
	IndexRunSize int64 `json:"IndexRunSize"`
	// QueriesFirst makes the node's lookups go first while it ingests
	// (ingest/pace): its walks and its Pebble index's compactions run on
	// threads of lower priority (nice 10 on Linux), and while finds come
	// its walkers take turns to decode and store entry chunks, so that a
	// processor of the Go runtime stays free for lookups, and its index
	// runs one compaction at a time. Ingest takes every processor again
	// half a second after the last lookup. The program should run with
	// GOMAXPROCS at pace.Procs() (four per core), as examples/indexer
	// does: a free processor is what lets a lookup in at once. An ingest
	// node of a sharded layer (Shard) answers no lookups and is not
	// paced. On in DefaultConfig.
	QueriesFirst bool `json:"QueriesFirst"`
	// UnfreezeOnStart unfreezes a frozen node at start when usage is
	// below FreezeAt, resuming ingestion from each publisher's FrozenAt.
	UnfreezeOnStart bool `json:"UnfreezeOnStart"`
	// UseAssigner makes the node ingest only the publishers assigned to
	// it through the admin API (assigner mode).
	UseAssigner bool `json:"UseAssigner"`
	// AllowPrivateAddrs lets the node dial loopback, private, link-local
	// and CGNAT addresses (publishers over HTTP and libp2p, the frozen
	// indexers of handoffs). Off by default, since announces and admin
	// requests name those addresses. Cloud metadata addresses stay
	// refused.
	AllowPrivateAddrs bool `json:"AllowPrivateAddrs"`
	// Progress is the interval of the per-publisher progress log lines.
	Progress time.Duration `json:"Progress"`
	// Poll is how often the node asks every publisher it follows for its
	// head, as it does at start; 0 disables polling after start.
	Poll time.Duration `json:"Poll"`
	// ShutdownTimeout bounds the wait for requests in flight when Run's
	// context ends.
	ShutdownTimeout time.Duration `json:"ShutdownTimeout"`
	// AnnounceRate limits HTTP announces to this many a second, more
	// answered 429: per publisher once its signed head has verified (twice
	// the rate at once), per source IP for publishers that never verified
	// (ten times the rate at once: many publishers behind one address). An announce of a publisher whose walk is queued or
	// running only marks it to be walked again and is not counted. 0: no
	// limit.
	AnnounceRate float64 `json:"AnnounceRate"`
	// AnnounceRateExempt are the sources AnnounceRate does not limit (an
	// assigner's address).
	AnnounceRateExempt []netip.Prefix `json:"AnnounceRateExempt"`
	// GossipPeerRate is how many gossip announces a second are taken from
	// one propagating peer (twice that at once). 0: no limit.
	GossipPeerRate float64 `json:"GossipPeerRate"`
	// Logger receives the node's log (nil: discard).
	Logger *slog.Logger `json:"-"`
	// Hooks observe the node, for metrics.
	Hooks Hooks `json:"-"`
	// P2PMetrics takes the libp2p host's metrics (nil: a registry of the
	// host's own that no one reads). libp2p would otherwise register them
	// in Prometheus's default registry, a global of the embedding program.
	P2PMetrics prometheus.Registerer `json:"-"`
}

// Hooks observe a node; each nil field is skipped. They are called from
// the node's goroutines and must not block.
type Hooks struct {
	// Ingest are the ingester's hooks ([ingest.WithHooks]).
	Ingest ingest.Hooks
	// DiskCheck is called after each disk usage read
	// ([freeze.WithOnCheck]).
	DiskCheck func(usage float64, err error)
	// FreezeState is called on each change of the freeze state, and once
	// by [New] with the state at start ([freeze.WithOnStateChange]).
	FreezeState func(s freeze.State, frozenAt time.Time)
	// Find wraps the lookup handlers of the find listener (to count and
	// time requests): it is called twice at start, once for the find API
	// and once for Delegated Routing V1 (under routing.Prefix).
	Find func(http.Handler) http.Handler
}

// DefaultConfig returns the configuration of examples/indexer without
// flags: Pebble under ./indexer-data, libp2p on 127.0.0.1:3003, mainnet's
// gossip topic, a freeze at 90%, a poll every hour.
func DefaultConfig() Config {
	return Config{
		Dir:             "./indexer-data",
		Store:           "pebble",
		P2P:             "/ip4/127.0.0.1/tcp/3003",
		Topic:           "/indexer/ingest/mainnet",
		FreezeAt:        90,
		Progress:        30 * time.Second,
		Poll:            time.Hour,
		ShutdownTimeout: 10 * time.Second,
		AnnounceRate:    netlimit.DefaultAnnounceRate,
		GossipPeerRate:  netlimit.DefaultGossipPeerRate,
		// A node that ingested 10M multihashes then holds about 126 MiB
		// (examples/scale; 242 MiB with the store package's defaults).
		IndexCacheSize:    32 << 20,
		IndexMemTableSize: 32 << 20,
		IndexRunSize:      32 << 20,
		QueriesFirst:      true,
	}
}

// Validate checks c as [New] does. Its error is a [*ConfigError] naming
// the first field found wrong ("indexernode: Config.DiskBudget: -1: want
// 0 or more bytes"), and errors.Is(err, [ErrInvalidConfig]) holds.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case c.Dir == "":
		return bad("Dir", "must not be empty")
	case c.Index != nil && c.Store != "":
		return bad("Store", "%q with Config.Index: leave Store empty when giving an index store", c.Store)
	case c.Index != nil && c.Shard != nil:
		return bad("Shard", "with Config.Index: a sharded node indexes into the query nodes")
	case c.Shard != nil && c.Shard.Layout == "":
		return bad("Shard.Layout", "must name the layout file or etcd://HOST:PORT/PREFIX")
	case c.Shard != nil && (c.Shard.PresenceTTL < 0 || c.Shard.PresenceTTL%time.Second != 0):
		return bad("Shard.PresenceTTL", "%v must be whole seconds, not negative", c.Shard.PresenceTTL)
	case c.Shard != nil && c.Shard.Name == "":
		return bad("Shard.Name", "empty: a sharded node needs its name among the layout's writers")
	case c.Shard != nil && c.Shard.BatchBytes < 0:
		return bad("Shard.BatchBytes", "%d must not be negative", c.Shard.BatchBytes)
	case c.Index == nil && c.Store != "pebble" && c.Store != "leveldb" && c.Store != "memory":
		return bad("Store", "%q: want pebble, leveldb or memory (or set Config.Index)", c.Store)
	case c.DiskBudget < 0:
		return bad("DiskBudget", "%d: want 0 or more bytes", c.DiskBudget)
	case c.FreezeAt > 100 || math.IsNaN(c.FreezeAt):
		return bad("FreezeAt", "%v: want at most 100", c.FreezeAt)
	case !strings.HasPrefix(c.Topic, "/indexer/ingest/") || len(c.Topic) == len("/indexer/ingest/"):
		return bad("Topic", "%q: want /indexer/ingest/<network>", c.Topic)
	case c.Progress <= 0:
		return bad("Progress", "%v must be positive", c.Progress)
	case c.Poll < 0:
		return bad("Poll", "%v must not be negative", c.Poll)
	case c.ShutdownTimeout <= 0:
		return bad("ShutdownTimeout", "%v must be positive", c.ShutdownTimeout)
	case !(c.AnnounceRate >= 0) || math.IsInf(c.AnnounceRate, 1):
		return bad("AnnounceRate", "%v: want 0 (no limit) or a positive rate", c.AnnounceRate)
	case !(c.GossipPeerRate >= 0) || math.IsInf(c.GossipPeerRate, 1):
		return bad("GossipPeerRate", "%v: want 0 (no limit) or a positive rate", c.GossipPeerRate)
	case c.IndexCacheSize < 0:
		return bad("IndexCacheSize", "%d must not be negative", c.IndexCacheSize)
	case c.IndexMemTableSize != 0 && (c.IndexMemTableSize < pebble.MinMemTableSize || c.IndexMemTableSize >= 4<<30):
		return bad("IndexMemTableSize", "%d: want 0 or from %d bytes to below 4 GiB", c.IndexMemTableSize, pebble.MinMemTableSize)
	case c.IndexRunSize != 0 && (c.IndexRunSize < 64<<10 || c.IndexRunSize > 2<<30):
		return bad("IndexRunSize", "%d: want 0 or from 64 KiB to 2 GiB", c.IndexRunSize)
	case len(c.HandoffFrom) > 0 && c.HandoffFromFile != "":
		return bad("HandoffFrom", "with Config.HandoffFromFile: give one, not both")
	}
	if _, err := localonly.New("", "", c.AdminHosts...); err != nil {
		return &ConfigError{Field: "AdminHosts", Err: err}
	}
	return nil
}

// ErrInvalidConfig is matched (errors.Is) by every error of
// [Config.Validate], and so of [New] for a bad Config.
var ErrInvalidConfig = errors.New("indexernode: invalid config")

// ConfigError is a bad field of a [Config]: Field is its name in Config
// ("DiskBudget", "Shard.Layout"), which a program maps onto its own flag
// or key names.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return "indexernode: Config." + e.Field + ": " + e.Err.Error() }

// Unwrap returns [ErrInvalidConfig] and the cause.
func (e *ConfigError) Unwrap() []error { return []error{ErrInvalidConfig, e.Err} }
