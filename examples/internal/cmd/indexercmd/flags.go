package indexercmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/internal/localonly"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// fileConfig is the configuration of the indexer program ([Main]): the
// JSON config file (-config), with the flags given on the command line on
// top. Field names are the JSON keys; durations are strings such as
// "30s". [fileConfig.node] turns it into an [indexernode.Config]; the listen addresses,
// the token file, the log level and the connection caps are the
// program's.
type fileConfig struct {
	// Dir is the data directory (identity key, index, state, freeze
	// state).
	Dir string
	// Store is the index backend: pebble, leveldb or memory.
	Store string
	// Find, Ingest, Admin and Metrics are the listen addresses of the
	// find API, the ingest (announce) API, the admin API and the
	// Prometheus endpoint; Metrics "" disables it.
	Find, Ingest, Admin, Metrics string
	// AdminToken, when set, is the bearer token the admin API requires.
	AdminToken string
	// AdminTokenFile is a file whose first line is the admin token (not
	// with AdminToken; without either, $INDEXKIT_ADMIN_TOKEN). An admin
	// listener off loopback requires a token.
	AdminTokenFile string
	// AdminHosts lists, comma-separated, the Host names besides loopback
	// ones that the admin API answers without a token (Config.AdminHosts).
	AdminHosts string
	// HandoffFrom lists, comma-separated, the find URLs of the indexers a
	// handoff may name as FrozenURL; HandoffFromFile is a file of them,
	// one per line, read at every handoff. Neither: any.
	HandoffFrom     string
	HandoffFromFile string
	// P2P is the libp2p listen multiaddr; "" or "none" disables libp2p
	// (gossip announces and libp2p publishers).
	P2P string
	// Topic is the gossip topic of announces.
	Topic string
	// FreezeAt is the disk usage, in percent, at which the node freezes;
	// negative disables freezing (0: the default, 90).
	FreezeAt float64
	// DiskBudget, when positive, is the disk the node may use, in bytes:
	// usage is then the bytes allocated under Dir out of DiskBudget
	// (not the filesystem's), read every 1 to 5 s, and FreezeAt applies
	// to it. 0: the filesystem's usage.
	DiskBudget int64
	// IndexNoWAL writes a pebble index without its write-ahead log
	// (Config.IndexNoWAL).
	IndexNoWAL bool
	// IndexSampling keeps each context's multihash set for the sampling
	// API (Config.IndexSampling).
	IndexSampling bool
	// IndexFullKeys keys a new pebble index on whole multihashes
	// (Config.IndexFullKeys).
	IndexFullKeys bool
	// IndexCacheSize and IndexMemTableSize size the pebble index's block
	// cache and memtables in bytes (Config.IndexCacheSize,
	// Config.IndexMemTableSize).
	IndexCacheSize    int64
	IndexMemTableSize int64
	// IndexLookupCache and AnswerCache size the caches of lookups and of
	// find answers in bytes (Config.IndexLookupCache, Config.AnswerCache).
	IndexLookupCache int64
	AnswerCache      int64
	// IndexRunSize is the sorted runs of a pebble index in bytes
	// (Config.IndexRunSize); 0 turns them off.
	IndexRunSize int64
	// QueriesFirst paces ingest while lookups come
	// (Config.QueriesFirst).
	QueriesFirst bool
	// Layout, when set, is the layout file of a keyspace-sharded layer
	// (or an etcd layout, etcd://HOST:PORT[,HOST:PORT...]/PREFIX, followed
	// by a watch): the node then indexes into its query nodes
	// (Config.Shard), re-reading the layout on SIGHUP. ShardName is the
	// node's name among the layout's writers; ShardTokenFile holds the
	// query nodes' bearer token (else $INDEXKIT_SHARD_TOKEN);
	// ShardBatchBytes sizes the batches; ShardPresenceTTL is the lease
	// TTL of the node's status key on etcd.
	Layout           string
	ShardName        string
	ShardTokenFile   string
	ShardBatchBytes  int
	ShardPresenceTTL duration `json:",omitempty"`
	// UnfreezeOnStart unfreezes a frozen node at start when usage is
	// below FreezeAt, resuming ingestion from each publisher's FrozenAt.
	UnfreezeOnStart bool
	// UseAssigner makes the node ingest only the publishers assigned to
	// it through the admin API (assigner mode).
	UseAssigner bool
	// AllowPrivateAddrs lets the node dial loopback, private, link-local
	// and CGNAT addresses: publishers (over HTTP and libp2p) and the
	// frozen indexers of handoffs. Off by default, since announces and
	// admin requests name those addresses. For a pool on a private
	// network or on one machine; cloud metadata addresses stay refused.
	AllowPrivateAddrs bool
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// Progress is the interval of the per-publisher progress log lines.
	Progress duration
	// Poll is how often the node asks every publisher it follows for its
	// head, as it does at start, so that a missed announce delays an ad
	// by at most Poll; 0 disables polling after start.
	Poll duration
	// ShutdownTimeout bounds the wait for requests in flight on SIGTERM.
	ShutdownTimeout duration
	// MaxConns caps the open connections of each HTTP listener; beyond
	// it a new one evicts the connection whose exchange began the longest
	// ago (internal/netlimit). 0: no cap.
	MaxConns int
	// MaxConnsPerIP caps the open connections of each HTTP listener from
	// one source IP (an IPv6 /64); more are closed at once. 0: no cap.
	MaxConnsPerIP int
	// AnnounceRate is how many HTTP announces a second one publisher that
	// verified, or one source IP of publishers that never verified, may
	// send (twice that at once); more are answered 429. 0: no limit.
	AnnounceRate float64
	// AnnounceRateExempt are the sources AnnounceRate does not limit:
	// comma-separated CIDR prefixes or addresses (an assigner's).
	AnnounceRateExempt string
	// GossipPeerRate is how many gossip announces a second are taken from
	// one propagating peer (twice that at once). 0: no limit.
	GossipPeerRate float64
	// Pprof, when set, is a loopback listen address serving Go's
	// net/http/pprof profiles under /debug/pprof/, for measuring the node
	// (examples/scale). "" (the default) serves none.
	Pprof string
}

// duration is a time.Duration that reads and writes as "30s" in JSON.
type duration = cli.Duration

// defaultFileConfig is the configuration without file or flags: every
// listener on loopback, and DefaultConfig's settings.
func defaultFileConfig() fileConfig {
	d := indexernode.DefaultConfig()
	return fileConfig{
		Dir:             d.Dir,
		Store:           d.Store,
		Find:            "127.0.0.1:3000",
		Ingest:          "127.0.0.1:3001",
		Admin:           "127.0.0.1:3002",
		Metrics:         "127.0.0.1:3004",
		P2P:             d.P2P,
		Topic:           d.Topic,
		FreezeAt:        d.FreezeAt,
		LogLevel:        "info",
		Progress:        duration(d.Progress),
		Poll:            duration(d.Poll),
		ShutdownTimeout: duration(d.ShutdownTimeout),

		MaxConns:           cli.DefaultMaxConns,
		MaxConnsPerIP:      cli.DefaultMaxConnsPerIP,
		AnnounceRate:       d.AnnounceRate,
		AnnounceRateExempt: cli.DefaultAnnounceRateExempt,
		GossipPeerRate:     d.GossipPeerRate,
		IndexCacheSize:     d.IndexCacheSize,
		IndexMemTableSize:  d.IndexMemTableSize,
		IndexLookupCache:   d.IndexLookupCache,
		AnswerCache:        d.AnswerCache,
		IndexRunSize:       d.IndexRunSize,
		QueriesFirst:       d.QueriesFirst,
	}
}

// flagSet binds every flag to a field of c, with c's values as defaults.
func flagSet(c *fileConfig, configPath *string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("indexer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: indexer [-config FILE] [flags]")
		fmt.Fprintln(fs.Output(), "Runs an IPNI indexer node (see go doc for the listeners and the data directory). Flags override the config file:")
		fs.PrintDefaults()
	}
	fs.StringVar(configPath, "config", "", "JSON config `file` (keys as the flags' names: Dir, Store, Find, ...); flags given explicitly override it")
	fs.StringVar(&c.Dir, "dir", c.Dir, "data `directory`")
	fs.StringVar(&c.Store, "store", c.Store, "index `backend`: pebble, leveldb or memory")
	fs.StringVar(&c.Find, "find", c.Find, "find API listen `address`")
	fs.StringVar(&c.Ingest, "ingest", c.Ingest, "ingest API (announce) listen `address`")
	fs.StringVar(&c.Admin, "admin", c.Admin, "admin API listen `address` (off loopback it requires a token: -admin-token-file)")
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "bearer `token` required by the admin API (\"\": none); shows in ps: prefer -admin-token-file or $"+cli.EnvAdminToken)
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", c.AdminTokenFile, "`file` whose first line is the admin API's bearer token")
	fs.StringVar(&c.AdminHosts, "admin-hosts", c.AdminHosts, "comma-separated host `names` the admin API answers without a token besides 127.0.0.0/8, [::1] and localhost (other Hosts get 421)")
	fs.StringVar(&c.HandoffFrom, "handoff-from", c.HandoffFrom, "comma-separated find `URLs` of the indexers a handoff may name as FrozenURL (\"\": any)")
	fs.StringVar(&c.HandoffFromFile, "handoff-from-file", c.HandoffFromFile, "`file` of the find URLs a handoff may name, one per line, read at every handoff")
	fs.StringVar(&c.P2P, "p2p", c.P2P, "libp2p listen `multiaddr` (\"\" or \"none\" disables libp2p and gossip)")
	fs.StringVar(&c.Topic, "topic", c.Topic, "gossip `topic` of announces")
	fs.Float64Var(&c.FreezeAt, "freeze-at", c.FreezeAt, "disk usage `percent` at which the node freezes (negative disables)")
	fs.Int64Var(&c.DiskBudget, "disk-budget", c.DiskBudget, "disk `bytes` the node may use: usage is the bytes allocated under -dir out of this, and Pebble's memtables, logs and MANIFEST are sized to it (0: the filesystem's usage)")
	fs.BoolVar(&c.IndexNoWAL, "index-no-wal", c.IndexNoWAL, "write a pebble index without Pebble's write-ahead log: index writes reach the disk at each ingest checkpoint, and a killed node applies the advertisements since its last checkpoint again (for bulk ingest of long chains; costly with many small walks)")
	fs.BoolVar(&c.IndexSampling, "sampling", c.IndexSampling, "keep each context's whole multihash set beside a pebble or leveldb index, so that the IPNI multihash-sampling API answers from it as its spec says, alike on every node (about doubles the index's disk, a third slower ingest); off: the API answers 501 for contexts without one")
	fs.BoolVar(&c.IndexFullKeys, "index-full-keys", c.IndexFullKeys, "key a new pebble index on whole multihashes (off: long cryptographic digests are keyed on their first 20 bytes, 12 bytes less per sha2-256 multihash; an existing index keeps its layout)")
	fs.Int64Var(&c.IndexCacheSize, "index-cache-size", c.IndexCacheSize, "`bytes` of the pebble index's block cache, which finds fill (0: the pebble package's 256 MiB)")
	fs.Int64Var(&c.IndexLookupCache, "index-lookup-cache", c.IndexLookupCache, "`bytes` of memory a pebble or leveldb index spends on what lookups read of it, so that a multihash looked up again reads no table; exact: writes drop what they change (0: 8 MiB; negative: none)")
	fs.Int64Var(&c.AnswerCache, "answer-cache", c.AnswerCache, "`bytes` of memory the find API spends on JSON answers kept ready over a pebble or leveldb index, each served while nothing it was built from has changed (0: 8 MiB; negative: none)")
	fs.Int64Var(&c.IndexMemTableSize, "index-memtable-size", c.IndexMemTableSize, "`bytes` of each of the pebble index's memtables; an ingesting node holds about two (0: the pebble package's 64 MiB)")
	fs.Int64Var(&c.IndexRunSize, "index-run-size", c.IndexRunSize, "`bytes` of multihashes a pebble index gathers in memory and writes as one sorted table, bypassing memtable and log; a killed node applies the advertisements since its last checkpoint again (0: off, every multihash goes through the memtable)")
	fs.BoolVar(&c.QueriesFirst, "queries-first", c.QueriesFirst, "let lookups go first while the node ingests: while finds come, ingest keeps a processor of the Go runtime free for them and the index runs one compaction at a time; the program runs with GOMAXPROCS at four per core (unless GOMAXPROCS is set)")
	fs.StringVar(&c.Layout, "layout", c.Layout, "layout `file` of a keyspace-sharded query layer: index into its query nodes through a durable outbox under -dir instead of a local index (re-read on SIGHUP; \"\": a plain indexer); or etcd://HOST:PORT[,HOST:PORT...]/PREFIX, an etcd layout the node follows by a watch while keeping its status under a lease there")
	fs.Func("shard-presence-ttl", "with an etcd -layout, the lease `TTL` of the node's status key, whole seconds (0: "+etcdlayout.DefaultTTL.String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.ShardPresenceTTL = duration(d)
		return err
	})
	fs.StringVar(&c.ShardName, "shard-name", c.ShardName, "the node's `name` among the layout's writers (with -layout)")
	fs.StringVar(&c.ShardTokenFile, "shard-token-file", c.ShardTokenFile, "`file` whose first line is the query nodes' bearer token (with -layout; else $"+EnvShardToken+")")
	fs.IntVar(&c.ShardBatchBytes, "shard-batch-bytes", c.ShardBatchBytes, "`bytes` of the batches sent to each query node (with -layout; 0: 1 MiB)")
	fs.BoolVar(&c.UnfreezeOnStart, "unfreeze-on-start", c.UnfreezeOnStart, "unfreeze a frozen node at start when usage is below -freeze-at")
	fs.StringVar(&c.Metrics, "metrics", c.Metrics, "Prometheus /metrics listen `address` (\"\" disables it)")
	fs.StringVar(&c.Pprof, "pprof", c.Pprof, "loopback listen `address` of Go's /debug/pprof/ profiles (\"\": none, the default)")
	fs.BoolVar(&c.UseAssigner, "use-assigner", c.UseAssigner, "ingest only the publishers assigned through the admin API")
	fs.BoolVar(&c.AllowPrivateAddrs, "allow-private-addrs", c.AllowPrivateAddrs, "dial publishers and frozen indexers on loopback, private, link-local and CGNAT addresses (a private pool; by default only public addresses are dialled, since announces name them)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log `level`: debug, info, warn or error")
	fs.Func("progress", "`interval` of the per-publisher progress log lines (default "+time.Duration(c.Progress).String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.Progress = duration(d)
		return err
	})
	fs.Func("poll", "`interval` at which every followed publisher is asked for its head, in case an announce was missed (0: only at start; default "+time.Duration(c.Poll).String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.Poll = duration(d)
		return err
	})
	fs.Func("shutdown-timeout", "how long requests in flight may take on SIGTERM (default "+time.Duration(c.ShutdownTimeout).String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.ShutdownTimeout = duration(d)
		return err
	})
	cli.ConnLimitFlags(fs, &c.MaxConns, &c.MaxConnsPerIP)
	fs.Float64Var(&c.AnnounceRate, "announce-rate", c.AnnounceRate, "HTTP announces a `rate` per second: per publisher once verified (twice that at once), per source IP before (ten times that at once); more get 429; announces of a publisher already queued are free (0: no limit)")
	fs.StringVar(&c.AnnounceRateExempt, "announce-rate-exempt", c.AnnounceRateExempt, "`prefixes` (comma-separated CIDRs) that -announce-rate does not limit, e.g. the assigner's address")
	fs.Float64Var(&c.GossipPeerRate, "gossip-peer-rate", c.GossipPeerRate, "gossip announces a `rate` per second taken from one propagating peer, twice that at once (0: no limit)")
	return fs
}

// loadConfig returns the configuration args (without the program name)
// make: the defaults, then the -config file, then the flags given. -h
// returns flag.ErrHelp.
func loadConfig(args []string, stderr io.Writer) (fileConfig, error) {
	c, err := cli.LoadConfig(args, stderr, defaultFileConfig, flagSet, cli.DecodeJSON)
	if err != nil {
		return c, err
	}
	return c, c.validate()
}

func (c *fileConfig) validate() error {
	if strings.EqualFold(c.P2P, "none") {
		c.P2P = ""
	}
	switch {
	case c.Dir == "":
		return errors.New("-dir must not be empty")
	case c.Store != "pebble" && c.Store != "leveldb" && c.Store != "memory":
		return fmt.Errorf("-store %q: want pebble, leveldb or memory", c.Store)
	case c.Find == "" || c.Ingest == "" || c.Admin == "":
		return errors.New("-find, -ingest and -admin must not be empty")
	case c.DiskBudget < 0:
		return fmt.Errorf("-disk-budget %d: want 0 or more bytes", c.DiskBudget)
	case c.FreezeAt > 100:
		return fmt.Errorf("-freeze-at %v: want at most 100", c.FreezeAt)
	case !strings.HasPrefix(c.Topic, "/indexer/ingest/") || len(c.Topic) == len("/indexer/ingest/"):
		return fmt.Errorf("-topic %q: want /indexer/ingest/<network>", c.Topic)
	case c.Progress <= 0:
		return fmt.Errorf("-progress %v must be positive", time.Duration(c.Progress))
	case c.Poll < 0:
		return fmt.Errorf("-poll %v must not be negative", time.Duration(c.Poll))
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("-shutdown-timeout %v must be positive", time.Duration(c.ShutdownTimeout))
	}
	if _, err := cli.ParseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("-log-level %q: %w", c.LogLevel, err)
	}
	if err := cli.CheckConnLimits(c.MaxConns, c.MaxConnsPerIP); err != nil {
		return err
	}
	if err := errors.Join(cli.CheckRate("-announce-rate", c.AnnounceRate), cli.CheckRate("-gossip-peer-rate", c.GossipPeerRate)); err != nil {
		return err
	}
	if _, err := cli.ParsePrefixes(c.AnnounceRateExempt); err != nil {
		return fmt.Errorf("-announce-rate-exempt %q: %w", c.AnnounceRateExempt, err)
	}
	return c.validateHandoffFrom()
}

// level returns the log level (validated).
func (c fileConfig) level() slog.Level {
	l, _ := cli.ParseLevel(c.LogLevel)
	return l
}

// node returns the node's [indexernode.Config] of c (validated), with the admin token
// resolved and the program's logger.
func (c fileConfig) node(token string, log *slog.Logger) (indexernode.Config, error) {
	exempt, err := cli.ParsePrefixes(c.AnnounceRateExempt)
	if err != nil {
		return indexernode.Config{}, fmt.Errorf("-announce-rate-exempt: %w", err)
	}
	if _, err := localonly.New("", "", hostList(c.AdminHosts)...); err != nil {
		return indexernode.Config{}, fmt.Errorf("-admin-hosts: %w", err)
	}
	var sc *indexernode.ShardConfig
	if c.Layout != "" {
		tok, err := shardToken(c.ShardTokenFile, os.Getenv)
		if err != nil {
			return indexernode.Config{}, err
		}
		sc = &indexernode.ShardConfig{Layout: c.Layout, Name: c.ShardName, Token: tok, BatchBytes: c.ShardBatchBytes,
			PresenceTTL: time.Duration(c.ShardPresenceTTL)}
	}
	return indexernode.Config{
		Shard:              sc,
		Dir:                c.Dir,
		Store:              c.Store,
		AdminToken:         token,
		AdminHosts:         hostList(c.AdminHosts),
		HandoffFrom:        handoffFromList(c.HandoffFrom),
		HandoffFromFile:    c.HandoffFromFile,
		P2P:                c.P2P,
		Topic:              c.Topic,
		FreezeAt:           c.FreezeAt,
		DiskBudget:         c.DiskBudget,
		IndexNoWAL:         c.IndexNoWAL,
		IndexSampling:      c.IndexSampling,
		IndexFullKeys:      c.IndexFullKeys,
		IndexCacheSize:     c.IndexCacheSize,
		IndexMemTableSize:  c.IndexMemTableSize,
		IndexLookupCache:   c.IndexLookupCache,
		AnswerCache:        c.AnswerCache,
		IndexRunSize:       c.IndexRunSize,
		QueriesFirst:       c.QueriesFirst,
		UnfreezeOnStart:    c.UnfreezeOnStart,
		UseAssigner:        c.UseAssigner,
		AllowPrivateAddrs:  c.AllowPrivateAddrs,
		Progress:           c.Progress.D(),
		Poll:               c.Poll.D(),
		ShutdownTimeout:    c.ShutdownTimeout.D(),
		AnnounceRate:       c.AnnounceRate,
		AnnounceRateExempt: exempt,
		GossipPeerRate:     c.GossipPeerRate,
		Logger:             log,
	}, nil
}
