package piececmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	leveldb "github.com/ipfs/go-ds-leveldb"
	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/piecenode"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/piece"
	pieceredis "github.com/indexkit/indexkit/piece/redis"
)

// options are the command line.
type options struct {
	listen          string
	providersURL    string
	pollInterval    time.Duration
	publishers      string
	store           string
	redisAddr       string
	redisPrefix     string
	dir             string
	keyPath         string
	concurrency     int
	capacity        int
	entryChunks     int
	requestTimeout  time.Duration
	requestRate     float64
	logLevel        string
	shutdownTimeout time.Duration
	maxConns        int
	maxConnsPerIP   int
	// allowPrivateAddrs lets the tracker dial publishers on loopback,
	// private, link-local and CGNAT addresses (-allow-private-addrs).
	allowPrivateAddrs bool
	// announceRate and announceRateExempt limit PUT /announce per source
	// IP, as the indexer's flags of the same names do.
	announceRate       float64
	announceRateExempt string
}

// defaultDir is the state directory when --dir is not given: piece under
// the user's cache directory, else under the temporary directory.
func defaultDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "indexkit", "piece")
	}
	return filepath.Join(os.TempDir(), "indexkit-piece")
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("piece", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: piece [flags]")
		fmt.Fprintln(fs.Output(), "Walks IPNI publishers' chains and serves signed samples of the payloads of each Filecoin piece they advertise (see go doc). Flags:")
		fs.PrintDefaults()
	}
	redisDefault := os.Getenv("REDIS_ADDR")
	if redisDefault == "" {
		redisDefault = "127.0.0.1:6379"
	}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:3000", "address of the REST API and of PUT /announce (host:port; :0 picks a port)")
	fs.StringVar(&o.providersURL, "providers-url", piece.DefaultProvidersURL, "IPNI /providers endpoint to learn providers and heads from; empty disables polling")
	fs.DurationVar(&o.pollInterval, "poll-interval", piece.DefaultPollInterval, "how often --providers-url is read and --publishers are asked for their head")
	fs.StringVar(&o.publishers, "publishers", "", "comma-separated HTTP publishers to walk besides those of --providers-url: base URLs or multiaddrs")
	fs.StringVar(&o.store, "store", "memory", "piece store: memory (lost at exit; walks start over) or redis")
	fs.StringVar(&o.redisAddr, "redis", redisDefault, "Redis address for --store redis (default $REDIS_ADDR or 127.0.0.1:6379)")
	fs.StringVar(&o.redisPrefix, "redis-prefix", "piece:", "prefix of every Redis key")
	fs.StringVar(&o.dir, "dir", "", "state directory: walker state (LevelDB, --store redis only) and the default key file (default: indexkit/piece under the user cache directory, else under the temporary directory)")
	fs.StringVar(&o.keyPath, "key", "", "file of the server's Ed25519 signing key, created if absent (default <dir>/key)")
	fs.IntVar(&o.concurrency, "concurrency", ingest.DefaultWorkers, "publishers walked at once")
	fs.IntVar(&o.capacity, "capacity", piece.DefaultCapacity, "payload CIDs kept per (provider, piece)")
	fs.IntVar(&o.entryChunks, "entry-chunks", piece.DefaultEntryChunks, "entry chunks of each advertisement read and sampled (0: all)")
	fs.DurationVar(&o.requestTimeout, "request-timeout", ingest.DefaultRequestTimeout, "bound of every request to a publisher")
	fs.Float64Var(&o.requestRate, "request-rate", piece.DefaultRequestRate, "requests per second to each publisher (0: unlimited)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long requests in flight may take at shutdown")
	o.maxConns, o.maxConnsPerIP = cli.DefaultMaxConns, cli.DefaultMaxConnsPerIP
	cli.ConnLimitFlags(fs, &o.maxConns, &o.maxConnsPerIP)
	fs.Float64Var(&o.announceRate, "announce-rate", cli.DefaultAnnounceRate, "announces a second one source IP may send to PUT /announce, twice that at once; more get 429 (0: no limit)")
	fs.StringVar(&o.announceRateExempt, "announce-rate-exempt", cli.DefaultAnnounceRateExempt, "`prefixes` (comma-separated CIDRs) that -announce-rate does not limit")
	fs.BoolVar(&o.allowPrivateAddrs, "allow-private-addrs", false, "dial publishers on loopback, private, link-local and CGNAT addresses (a private pool; by default only public addresses are dialled, since /providers records and announces name them)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.entryChunks < 0 {
		return nil, fmt.Errorf("-entry-chunks %d must not be negative", o.entryChunks)
	}
	if o.store != "memory" && o.store != "redis" {
		return nil, fmt.Errorf("-store %q: want memory or redis", o.store)
	}
	if err := cli.CheckConnLimits(o.maxConns, o.maxConnsPerIP); err != nil {
		return nil, err
	}
	if err := cli.CheckRate("-announce-rate", o.announceRate); err != nil {
		return nil, err
	}
	if _, err := cli.ParsePrefixes(o.announceRateExempt); err != nil {
		return nil, fmt.Errorf("-announce-rate-exempt %q: %w", o.announceRateExempt, err)
	}
	if o.dir == "" {
		o.dir = defaultDir()
	}
	if o.keyPath == "" {
		o.keyPath = filepath.Join(o.dir, "key")
	}
	return o, nil
}

// Main is the piece sampler program: it parses args as examples/piece's
// flags (see that command's documentation), opens the store, the walker
// state (-dir) and the key (-key), binds -listen with the connection caps
// and runs a piecenode.Sampler until ctx is done (SIGINT or SIGTERM in the binary,
// the caller's cancel in process). It logs to stderr, including one
// msg=listening name=api addr=<host:port> line. It returns nil after a
// clean shutdown and flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level, err := cli.ParseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := cli.NewLogger(stderr, level)
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return fmt.Errorf("-dir: %w", err)
	}
	cfg := piecenode.DefaultConfig()
	if cfg.Key, err = piece.LoadOrCreateKey(o.keyPath); err != nil {
		return fmt.Errorf("-key: %w", err)
	}

	// Both stores keep the walk positions with the pieces (piece.Walks);
	// the walker state (addresses, backoff, the claim name) is on disk
	// with Redis, so a restart takes its own claims back at once, and in
	// memory with the memory store.
	switch o.store {
	case "memory":
		cfg.Capacity = o.capacity
	case "redis":
		// go-redis logs dial failures of its own on stderr, ahead of the
		// error below that names the flag: silence it (a process-wide
		// setting, which a program may make).
		goredis.SetLogger(QuietRedis{})
		rdb := goredis.NewClient(&goredis.Options{Addr: o.redisAddr})
		defer rdb.Close()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := rdb.Ping(pctx).Err()
		cancel()
		if err != nil {
			return fmt.Errorf("-redis %s: %w", o.redisAddr, err)
		}
		r, err := pieceredis.New(rdb, o.redisPrefix, pieceredis.WithCapacity(o.capacity))
		if err != nil {
			return err
		}
		defer r.Close()
		walk := filepath.Join(o.dir, "walk")
		ldb, err := leveldb.NewDatastore(walk, nil)
		if err != nil {
			if errors.Is(err, syscall.EWOULDBLOCK) {
				err = fmt.Errorf("%w (locked: is another piece sampler running on this -dir?)", err)
			}
			return fmt.Errorf("-dir: walker state %s: %w", walk, err)
		}
		defer ldb.Close()
		cfg.Store, cfg.Capacity, cfg.WalkState = r, 0, ldb
	}

	for _, p := range strings.Split(o.publishers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.Publishers = append(cfg.Publishers, p)
		}
	}
	cfg.AnnounceRateExempt, _ = cli.ParsePrefixes(o.announceRateExempt) // checked by parseFlags
	cfg.ProvidersURL, cfg.PollInterval = o.providersURL, o.pollInterval
	cfg.Concurrency, cfg.RequestTimeout, cfg.RequestRate = o.concurrency, o.requestTimeout, o.requestRate
	cfg.EntryChunks = o.entryChunks
	cfg.AnnounceRate, cfg.AllowPrivateAddrs = o.announceRate, o.allowPrivateAddrs
	cfg.ShutdownTimeout, cfg.Logger = o.shutdownTimeout, log

	ln, err := cli.Listen(o.listen, o.maxConns, o.maxConnsPerIP)
	if err != nil {
		return fmt.Errorf("-listen %s: %w", o.listen, err)
	}
	if cfg.AllowPrivateAddrs {
		cli.WarnPrivateAddrs(log, "publishers")
	}
	node, err := piecenode.New(ctx, cfg, piecenode.Listeners{API: ln})
	if err != nil {
		ln.Close()
		return err
	}
	defer node.Close()
	log.Info("starting", "store", o.store, "dir", o.dir, "key", o.keyPath, "pubkey", node.PubKey(),
		"providers_url", o.providersURL, "publishers", cfg.Publishers, "concurrency", o.concurrency, "dial_policy", node.DialPolicy().String())
	cli.LogListening(log, "api", node.Addrs().API)
	return node.Run(ctx)
}

// QuietRedis is a go-redis logger (goredis.SetLogger) that drops what the
// client logs on its own (dial failures and retries, as "redis: ...
// pool.go: ..." lines): the program reports the errors that matter,
// naming the flag, and the client's lines only came ahead of them.
type QuietRedis struct{}

// Printf drops the line.
func (QuietRedis) Printf(context.Context, string, ...any) {}
