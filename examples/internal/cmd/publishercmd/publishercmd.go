package publishercmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/schema"
)

// fileConfig is the configuration of a publisher process: the JSON config
// file (-config), with the flags given on the command line on top. Field
// names are the JSON keys; durations are strings such as "1s".
// fileConfig.config turns it into the typed publishernode.Config.
type fileConfig struct {
	// Listen is the HTTP address of publisher 0; publisher i listens on
	// the same host and port+i, or on a free port each when the port
	// is 0.
	Listen string
	// Publishers is how many publishers run, each with its own identity
	// and chain.
	Publishers int
	// Seed, with a publisher's index, derives everything of it (see
	// publishernode.PublisherSeed).
	Seed uint64
	// Interval is the time between two ads of each publisher.
	Interval duration
	// InitialAds is how many ads each publisher has at a fresh start,
	// announced at once.
	InitialAds int
	// MaxAds stops producing once a publisher has that many ads (it
	// still serves them); 0: no limit.
	MaxAds int
	// Entries is the number of multihashes of each ad with entries.
	Entries int
	// ChunkSize is the number of multihashes per entry chunk.
	ChunkSize int
	// RemoveEvery and UpdateEvery make every Nth ad a removal (IsRm) or a
	// metadata update of an earlier context (0: never).
	RemoveEvery, UpdateEvery int
	// PieceContextEvery makes every Nth ad that starts a new context name
	// its Filecoin piece in its ContextID (the dag-cbor [size, pieceCID]
	// Curio writes) rather than in graphsync metadata (0: never, the
	// default). See publishernode.Spec.PieceContextEvery.
	PieceContextEvery int
	// Announce are the base URLs to announce every new head to over HTTP
	// (an assigner's or indexers' announce listener; a URL without a path
	// gets /announce).
	Announce []string
	// Dir, when set, keeps the publishers' positions so that a restart
	// continues the same chains; "" keeps nothing.
	Dir string
	// Fault makes every publisher of the process misbehave: "" (none),
	// bad-signature, corrupt or huge. See publishernode.Fault.
	Fault publishernode.Fault
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// ShutdownTimeout bounds the wait for requests in flight on SIGTERM.
	ShutdownTimeout duration
	// MaxConns caps the open connections of each publisher's listener;
	// beyond it a new one evicts the connection whose exchange began the
	// longest ago (internal/netlimit). 0: no cap.
	MaxConns int
	// MaxConnsPerIP caps the open connections of each publisher's
	// listener from one source IP (an IPv6 /64); more are closed at once.
	// 0: no cap.
	MaxConnsPerIP int
}

// duration is a time.Duration that reads and writes as "1s" in JSON.
type duration = cli.Duration

// defaultFileConfig is the configuration without file or flags: one
// honest publisher on 127.0.0.1:3100 that publishes an ad of 100
// multihashes a second, with a removal every 10th ad and a metadata
// update every 7th.
func defaultFileConfig() fileConfig {
	return fileConfig{
		Listen:          "127.0.0.1:3100",
		Publishers:      1,
		Seed:            1,
		Interval:        duration(time.Second),
		InitialAds:      1,
		Entries:         100,
		ChunkSize:       100,
		RemoveEvery:     10,
		UpdateEvery:     7,
		LogLevel:        "info",
		ShutdownTimeout: duration(5 * time.Second),

		MaxConns:      cli.DefaultMaxConns,
		MaxConnsPerIP: cli.DefaultMaxConnsPerIP,
	}
}

// urlsFlag appends comma-separated URLs to a list, each time it is given.
type urlsFlag struct{ urls *[]string }

func (f urlsFlag) String() string {
	if f.urls == nil {
		return ""
	}
	return strings.Join(*f.urls, ",")
}

func (f urlsFlag) Set(s string) error {
	for u := range strings.SplitSeq(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			*f.urls = append(*f.urls, u)
		}
	}
	return nil
}

// flagSet binds every flag to a field of c, with c's values as defaults.
func flagSet(c *fileConfig, configPath *string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("publisher", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: publisher [-config FILE] [flags]")
		fmt.Fprintln(fs.Output(), "Runs generated IPNI publishers that keep publishing signed ads over ipnisync HTTP and announce them. Flags override the config file:")
		fs.PrintDefaults()
	}
	fs.StringVar(configPath, "config", "", "JSON config `file` (keys as in Config: Listen, Publishers, Seed, ...); flags given explicitly override it")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP `address` of publisher 0; publisher i gets port+i (port 0: a free port each)")
	fs.IntVar(&c.Publishers, "publishers", c.Publishers, "`number` of publishers")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "`seed` of every key, multihash and choice (publisher i: PublisherSeed(seed, i))")
	fs.Func("interval", "`time` between two ads of each publisher (default "+c.Interval.D().String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.Interval = duration(d)
		return err
	})
	fs.IntVar(&c.InitialAds, "initial-ads", c.InitialAds, "`ads` each publisher has at a fresh start")
	fs.IntVar(&c.MaxAds, "max-ads", c.MaxAds, "stop producing at this many `ads` per publisher, and keep serving (0: never)")
	fs.IntVar(&c.Entries, "entries", c.Entries, "multihashes per ad with entries (`n`)")
	fs.IntVar(&c.ChunkSize, "chunk-size", c.ChunkSize, "multihashes per entry chunk (`n`)")
	fs.IntVar(&c.RemoveEvery, "remove-every", c.RemoveEvery, "every `n`th ad removes an earlier context (0: never)")
	fs.IntVar(&c.UpdateEvery, "update-every", c.UpdateEvery, "every `n`th ad updates the metadata of an earlier context (0: never)")
	fs.IntVar(&c.PieceContextEvery, "piece-context-every", c.PieceContextEvery, "every `n`th new context names its piece in its ContextID, as Curio does (0: never)")
	fs.Var(urlsFlag{&c.Announce}, "announce", "comma-separated base `URLs` to announce each new head to (may be repeated)")
	fs.StringVar(&c.Dir, "dir", c.Dir, "`directory` that keeps the publishers' positions across restarts (\"\": none)")
	fs.TextVar(&c.Fault, "fault", c.Fault, "misbehave: bad-signature, corrupt or huge (\"\": an honest publisher)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log `level`: debug, info, warn or error")
	fs.Func("shutdown-timeout", "how long requests in flight may take on SIGTERM (default "+c.ShutdownTimeout.D().String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.ShutdownTimeout = duration(d)
		return err
	})
	cli.ConnLimitFlags(fs, &c.MaxConns, &c.MaxConnsPerIP)
	return fs
}

// LoadConfig returns the typed configuration args (the command line of
// examples/publisher, without the program name) make: the defaults, then
// the -config file, then the flags given, validated. The flags that only
// [Main] uses (-listen, -log-level, the connection caps) are checked and
// dropped. examples/localpool reads a publisher role's chains from it. -h returns flag.ErrHelp.
func LoadConfig(args []string, stderr io.Writer) (publishernode.Config, error) {
	fc, err := loadFileConfig(args, stderr)
	if err != nil {
		return publishernode.Config{}, err
	}
	return fc.config(), nil
}

// loadFileConfig is LoadConfig before the conversion to Config.
func loadFileConfig(args []string, stderr io.Writer) (fileConfig, error) {
	c, err := cli.LoadConfig(args, stderr, defaultFileConfig, flagSet, decodeFile)
	if err != nil {
		return c, err
	}
	return c, c.validate()
}

// decodeFile decodes the -config file into v, a *fileConfig. The type is
// named Config there, so that a JSON error names a key as Config.<Key>, as
// the binary's documentation does.
func decodeFile(data []byte, v any) error {
	type Config fileConfig
	return cli.DecodeJSONOnly(data, (*Config)(v.(*fileConfig)))
}

func (c *fileConfig) validate() error {
	host, port, err := net.SplitHostPort(c.Listen)
	switch {
	case err != nil:
		return fmt.Errorf("-listen %q: %w", c.Listen, err)
	case host == "":
		return fmt.Errorf("-listen %q: name the host (127.0.0.1)", c.Listen)
	case port == "":
		return fmt.Errorf("-listen %q: name the port (0: a free one)", c.Listen)
	case c.Publishers < 1:
		return fmt.Errorf("-publishers %d: want at least 1", c.Publishers)
	case c.Interval <= 0:
		return fmt.Errorf("-interval %v must be positive", c.Interval.D())
	case c.InitialAds < 0 || c.MaxAds < 0:
		return fmt.Errorf("-initial-ads %d and -max-ads %d must not be negative", c.InitialAds, c.MaxAds)
	case c.Entries < 1:
		return fmt.Errorf("-entries %d: want at least 1", c.Entries)
	case c.ChunkSize < 1 || c.ChunkSize > schema.MaxChunkEntries:
		return fmt.Errorf("-chunk-size %d: want 1 to %d", c.ChunkSize, schema.MaxChunkEntries)
	case c.RemoveEvery < 0 || c.UpdateEvery < 0:
		return fmt.Errorf("-remove-every %d and -update-every %d must not be negative", c.RemoveEvery, c.UpdateEvery)
	case c.PieceContextEvery < 0:
		return fmt.Errorf("-piece-context-every %d must not be negative", c.PieceContextEvery)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("-shutdown-timeout %v must be positive", c.ShutdownTimeout.D())
	}
	if err := new(publishernode.Fault).UnmarshalText([]byte(c.Fault)); err != nil {
		return fmt.Errorf("-fault: %w", err)
	}
	if _, err := cli.ParseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("-log-level %q: %w", c.LogLevel, err)
	}
	if err := cli.CheckConnLimits(c.MaxConns, c.MaxConnsPerIP); err != nil {
		return err
	}
	if len(c.Announce) == 0 {
		c.Announce = nil
	}
	return nil
}

// config is the typed Config of c (validated).
func (c fileConfig) config() publishernode.Config {
	return publishernode.Config{
		Publishers: c.Publishers, Seed: c.Seed, Interval: c.Interval.D(), InitialAds: c.InitialAds, MaxAds: c.MaxAds,
		Entries: c.Entries, ChunkSize: c.ChunkSize, RemoveEvery: c.RemoveEvery, UpdateEvery: c.UpdateEvery,
		PieceContextEvery: c.PieceContextEvery, Announce: c.Announce, Dir: c.Dir, Fault: c.Fault,
		ShutdownTimeout: c.ShutdownTimeout.D(),
	}
}

// level returns the log level (validated).
func (c fileConfig) level() slog.Level {
	l, _ := cli.ParseLevel(c.LogLevel)
	return l
}

// Main is the publisher program: it parses args as examples/publisher's
// flags (see that command's documentation), binds one listener per
// publisher (on -listen and the ports after it, or each on a free port
// when its port is 0) with the connection caps, and runs a
// publishernode.Node until
// ctx is done (SIGINT or SIGTERM in the binary, the caller's cancel in
// process). It logs to stderr one msg=listening name=publisher-<i>
// addr=<host:port> line per publisher, then a msg=publisher line with its
// index, peer ID and fault, then msg=starting. It returns nil after a
// clean shutdown and flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fc, err := loadFileConfig(args, stderr)
	if err != nil {
		return err
	}
	log := cli.NewLogger(stderr, fc.level())
	cfg := fc.config()
	cfg.Logger = log
	lns, err := listen(fc.Listen, cfg.Publishers, fc.MaxConns, fc.MaxConnsPerIP)
	if err != nil {
		return err
	}
	node, err := publishernode.New(ctx, cfg, publishernode.Listeners{Publishers: lns})
	if err != nil {
		closeAll(lns)
		return err
	}
	defer node.Close()
	addrs := node.Addrs()
	for i, p := range node.Publishers() {
		cli.LogListening(log, "publisher-"+strconv.Itoa(i), addrs.Publishers[i])
		log.Info("publisher", "index", i, "publisher", p.ID().String(), "ads", p.Ads(), "fault", string(p.Fault()))
	}
	log.Info("starting", "publishers", cfg.Publishers, "seed", cfg.Seed, "interval", cfg.Interval.String(),
		"entries", cfg.Entries, "announce", cfg.Announce, "dir", cfg.Dir, "fault", string(cfg.Fault))
	return node.Run(ctx)
}

// listen binds n listeners: on addr and the n-1 ports after it, or each
// on a free port when addr's port is 0; each with the connection caps
// maxConns and maxConnsPerIP (see cli.Listen).
func listen(addr string, n, maxConns, maxConnsPerIP int) ([]net.Listener, error) {
	host, portStr, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("-listen %q: port: %w", addr, err)
	}
	lns := make([]net.Listener, 0, n)
	for i := range n {
		p := 0
		if port != 0 {
			p = port + i
		}
		ln, err := cli.Listen(net.JoinHostPort(host, strconv.Itoa(p)), maxConns, maxConnsPerIP)
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("-listen: publisher-%d: %w", i, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}
