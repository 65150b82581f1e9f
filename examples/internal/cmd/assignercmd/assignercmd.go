package assignercmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/httpserve"
)

// fileConfig is the binary's configuration: the JSON config file
// (-config), with the flags given on the command line on top. Field names
// are the JSON keys; durations are strings such as "5m". fileConfig.config
// turns it into the typed assignernode.Config.
type fileConfig struct {
	// Indexers is the pool.
	Indexers []fileIndexer
	// Replication and PresetReplication: indexers per publisher (0: 1).
	Replication, PresetReplication int
	// PollInterval is the period of the status polls.
	PollInterval duration
	// Policy is the reference's {Allow, Except} on publisher peer IDs.
	Policy filePolicy
	// Topic is the gossip topic of announces.
	Topic string
	// Listen is the announce listener (PUT /announce, /ingest/announce);
	// StateListen the read-only state API (GET /assignments, /indexers);
	// Metrics the Prometheus /metrics listener ("" disables it).
	Listen, StateListen, Metrics string
	// P2P is the libp2p listen multiaddr for gossip; "none" or "" disables it.
	P2P string
	// P2PVerify fetches the signed heads of unknown publishers that
	// announce only libp2p addresses over libp2p, so that they can be
	// assigned: over the P2P host, or without it over a host that listens
	// nowhere (it only dials, under the policy of AllowPrivateAddrs).
	// On by default; false assigns only publishers with an HTTP address.
	P2PVerify bool
	// RequestTimeout bounds each request to an indexer.
	RequestTimeout duration
	// AdminToken is the bearer token of the indexers' admin APIs.
	AdminToken string
	// AllowPrivateAddrs lets the assigner fetch an unknown publisher's
	// signed head from loopback, private, link-local and CGNAT addresses.
	// Off by default, since announces name those addresses. For a pool on
	// a private network or on one machine; cloud metadata addresses stay
	// refused. The indexers' URLs are configured and not restricted.
	AllowPrivateAddrs bool
	// AdminTokenFile is a file whose first line is that token (not with
	// AdminToken; without either, $INDEXKIT_ADMIN_TOKEN).
	AdminTokenFile string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// ShutdownTimeout bounds the wait for requests in flight on SIGTERM.
	ShutdownTimeout duration
	// MaxConns caps the open connections of each HTTP listener; beyond
	// it a new one evicts the connection whose exchange began the longest
	// ago (internal/netlimit). 0: no cap.
	MaxConns int
	// MaxConnsPerIP caps the open connections of each HTTP listener from
	// one source IP (an IPv6 /64); more are closed at once. 0: no cap.
	MaxConnsPerIP int
	// AnnounceRate is how many HTTP announces a second one publisher the
	// assigner knows (twice that at once), or one source IP of publishers
	// it does not know (ten times that at once), may send; more are
	// answered 429. 0: no limit.
	AnnounceRate float64
	// AnnounceRateExempt are the sources AnnounceRate does not limit:
	// comma-separated CIDR prefixes or addresses.
	AnnounceRateExempt string
	// GossipPeerRate is how many gossip announces a second are taken from
	// one propagating peer (twice that at once). 0: no limit.
	GossipPeerRate float64
}

// fileIndexer is one indexer of the pool.
type fileIndexer struct {
	ID                           string `json:",omitempty"`
	AdminURL, FindURL, IngestURL string
	// PresetPeers are the publishers preset to it.
	PresetPeers []string `json:",omitempty"`
}

// filePolicy is {Allow, Except}: Except is a deny list when Allow is true and
// an allow list when it is false.
type filePolicy struct {
	Allow  bool
	Except []string
}

// duration is a time.Duration that reads and writes as "5m" in JSON.
type duration = cli.Duration

// defaultFileConfig is the configuration without file or flags.
func defaultFileConfig() fileConfig {
	return fileConfig{
		Replication:       1,
		PresetReplication: 1,
		PollInterval:      duration(assigner.DefaultPollInterval),
		Policy:            filePolicy{Allow: true},
		Topic:             assigner.DefaultTopic,
		Listen:            "127.0.0.1:3001",
		StateListen:       "127.0.0.1:3010",
		Metrics:           "127.0.0.1:3011",
		P2P:               "none",
		P2PVerify:         true,
		RequestTimeout:    duration(assigner.DefaultRequestTimeout),
		LogLevel:          "info",
		ShutdownTimeout:   duration(10 * time.Second),

		MaxConns:           cli.DefaultMaxConns,
		MaxConnsPerIP:      cli.DefaultMaxConnsPerIP,
		AnnounceRate:       cli.DefaultAnnounceRate,
		AnnounceRateExempt: cli.DefaultAnnounceRateExempt,
		GossipPeerRate:     cli.DefaultGossipPeerRate,
	}
}

// indexerFlag is the repeatable -indexer flag: admin=URL,find=URL,ingest=URL[,id=NAME].
type indexerFlag struct{ c *fileConfig }

func (f indexerFlag) String() string { return "" }

func (f indexerFlag) Set(s string) error {
	var ix fileIndexer
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q: want key=value", kv)
		}
		switch k {
		case "admin":
			ix.AdminURL = v
		case "find":
			ix.FindURL = v
		case "ingest":
			ix.IngestURL = v
		case "id":
			ix.ID = v
		case "preset":
			ix.PresetPeers = append(ix.PresetPeers, v)
		default:
			return fmt.Errorf("unknown key %q: want admin, find, ingest, id or preset", k)
		}
	}
	f.c.Indexers = append(f.c.Indexers, ix)
	return nil
}

func flagSet(c *fileConfig, configPath *string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("assigner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: assigner [-config FILE] [flags]")
		fmt.Fprintln(fs.Output(), "Assigns publishers to a pool of IPNI indexers (see go doc). Flags override the config file:")
		fs.PrintDefaults()
	}
	fs.StringVar(configPath, "config", "", "JSON config `file` (keys as in Config: Indexers, Replication, ...); flags given explicitly override it")
	fs.Var(indexerFlag{c}, "indexer", "add an indexer to the pool: `admin=URL,find=URL,ingest=URL[,id=NAME][,preset=PEER...]` (repeatable)")
	fs.IntVar(&c.Replication, "replication", c.Replication, "indexers per publisher")
	fs.IntVar(&c.PresetReplication, "preset-replication", c.PresetReplication, "indexers per preset publisher")
	fs.Func("poll-interval", "`interval` of the status polls (default "+c.PollInterval.D().String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.PollInterval = duration(d)
		return err
	})
	fs.Func("request-timeout", "`timeout` of each request to an indexer (default "+c.RequestTimeout.D().String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.RequestTimeout = duration(d)
		return err
	})
	fs.StringVar(&c.Topic, "topic", c.Topic, "gossip `topic` of announces")
	fs.StringVar(&c.Listen, "listen", c.Listen, "announce listen `address` (PUT /announce)")
	fs.StringVar(&c.StateListen, "state-listen", c.StateListen, "state API listen `address` (GET /assignments, /indexers)")
	fs.StringVar(&c.Metrics, "metrics", c.Metrics, "Prometheus /metrics listen `address` (\"\" disables it)")
	fs.StringVar(&c.P2P, "p2p", c.P2P, "libp2p listen `multiaddr` for gossip (\"none\" disables it)")
	fs.BoolVar(&c.P2PVerify, "p2p-verify", c.P2PVerify, "verify the signed heads of publishers that announce only libp2p addresses over libp2p (over the -p2p host, or without it a host that listens nowhere and only dials); false: publishers without an HTTP address are never assigned")
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "bearer `token` of the indexers' admin APIs (shows in ps: prefer -admin-token-file or $"+cli.EnvAdminToken+")")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", c.AdminTokenFile, "`file` whose first line is the bearer token of the indexers' admin APIs")
	fs.BoolVar(&c.AllowPrivateAddrs, "allow-private-addrs", c.AllowPrivateAddrs, "fetch unknown publishers' signed heads from loopback, private, link-local and CGNAT addresses (a private pool; by default only public addresses are dialled, since announces name them)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log `level`: debug, info, warn or error")
	fs.Func("shutdown-timeout", "how long requests in flight may take on SIGTERM (default "+c.ShutdownTimeout.D().String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		c.ShutdownTimeout = duration(d)
		return err
	})
	cli.ConnLimitFlags(fs, &c.MaxConns, &c.MaxConnsPerIP)
	fs.Float64Var(&c.AnnounceRate, "announce-rate", c.AnnounceRate, "HTTP announces a `rate` per second: per publisher the assigner knows (twice that at once), per source IP for unknown ones (ten times that at once); more get 429; announces of a publisher being verified or assigned are free (0: no limit)")
	fs.StringVar(&c.AnnounceRateExempt, "announce-rate-exempt", c.AnnounceRateExempt, "`prefixes` (comma-separated CIDRs) that -announce-rate does not limit")
	fs.Float64Var(&c.GossipPeerRate, "gossip-peer-rate", c.GossipPeerRate, "gossip announces a `rate` per second taken from one propagating peer, twice that at once (0: no limit)")
	return fs
}

// loadConfig returns the configuration args (without the program name)
// make: the defaults, then the -config file, then the flags given (an
// -indexer flag adds to the file's pool). -h returns flag.ErrHelp.
func loadConfig(args []string, stderr io.Writer) (fileConfig, error) {
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
	if strings.EqualFold(c.P2P, "none") {
		c.P2P = ""
	}
	switch {
	case len(c.Indexers) == 0:
		return errors.New("no indexer in the pool: set Indexers in -config or give -indexer")
	case c.Listen == "" || c.StateListen == "":
		return errors.New("-listen and -state-listen must not be empty")
	case c.Replication < 0 || c.PresetReplication < 0:
		return errors.New("-replication and -preset-replication must not be negative")
	case c.PollInterval <= 0 || c.RequestTimeout <= 0 || c.ShutdownTimeout <= 0:
		return errors.New("-poll-interval, -request-timeout and -shutdown-timeout must be positive")
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
	_, err := c.config("", nil, nil)
	return err
}

func (c fileConfig) level() slog.Level {
	l, _ := cli.ParseLevel(c.LogLevel)
	return l
}

// serviceConfig turns c into the assignernode.ServiceConfig (peer IDs
// parsed).
func (c fileConfig) serviceConfig() (assignernode.ServiceConfig, error) {
	sc := assignernode.ServiceConfig{
		Replication: c.Replication, PresetReplication: c.PresetReplication,
		PollInterval: c.PollInterval.D(), Topic: c.Topic,
	}
	ids := func(what string, ss []string) ([]peer.ID, error) {
		var out []peer.ID
		for _, s := range ss {
			p, err := peer.Decode(s)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", what, s, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	for i, ix := range c.Indexers {
		preset, err := ids(fmt.Sprintf("Indexers[%d].PresetPeers", i), ix.PresetPeers)
		if err != nil {
			return sc, err
		}
		sc.Indexers = append(sc.Indexers, assigner.ServiceIndexer{
			ID: ix.ID, AdminURL: ix.AdminURL, FindURL: ix.FindURL, IngestURL: ix.IngestURL, PresetPublishers: preset,
		})
	}
	except, err := ids("Policy.Except", c.Policy.Except)
	if err != nil {
		return sc, err
	}
	if !c.Policy.Allow || len(except) > 0 {
		sc.Policy = &assignernode.Policy{Allow: c.Policy.Allow, Except: except}
	}
	return sc, nil
}

// config is the typed Config of c (validated: the role checks the rest,
// URLs, replication and topic), with the admin token tok, logging to log
// and feeding met.
func (c fileConfig) config(tok string, log *slog.Logger, met *metrics) (assignernode.Config, error) {
	sc, err := c.serviceConfig()
	if err != nil {
		return assignernode.Config{}, err
	}
	exempt, _ := cli.ParsePrefixes(c.AnnounceRateExempt) // checked by validate
	cfg := assignernode.Config{
		Service:            sc,
		RequestTimeout:     c.RequestTimeout.D(),
		AdminToken:         tok,
		AllowPrivateAddrs:  c.AllowPrivateAddrs,
		ShutdownTimeout:    c.ShutdownTimeout.D(),
		AnnounceRate:       c.AnnounceRate,
		AnnounceRateExempt: exempt,
		GossipPeerRate:     c.GossipPeerRate,
		Logger:             log,
	}
	if met != nil {
		cfg.Hooks = met.hooks()
	}
	return cfg, cfg.Validate()
}

// newHost starts a libp2p host of the assigner: listening on listen, or
// on nothing when listen is "" (a host that only dials, for head checks).
// It has a fresh identity each start: the assigner's peer ID only signs
// its republishes and authenticates its head checks. Its dials go
// through the gater of policy. No relay, bootstrap, mDNS or NAT port
// mapping (the last three are off by default), and no metrics in the
// global registry.
func newHost(listen string, policy *netpolicy.Policy) (host.Host, error) {
	addrs := libp2p.NoListenAddrs
	if listen != "" {
		addrs = libp2p.ListenAddrStrings(listen)
	}
	return libp2p.New(addrs, libp2p.DisableRelay(), libp2p.DisableMetrics(),
		libp2p.ConnectionGater(ipnisync.NewGater(policy)))
}

// Main is the assigner program: it parses args as examples/assigner's
// flags (see that command's documentation), binds the announce, state and
// /metrics listeners with the connection caps, starts the libp2p hosts of
// -p2p and -p2p-verify and runs an assignernode.Assigner until
// ctx is done (SIGINT or SIGTERM in the binary, the caller's cancel in
// process). It logs to stderr, including one msg=listening name=<x>
// addr=<host:port> line per listener (and one name=p2p line per libp2p
// address). It returns nil after a clean shutdown and flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fc, err := loadConfig(args, stderr)
	if err != nil {
		return err
	}
	tok, err := cli.ResolveAdminToken(fc.AdminToken, fc.AdminTokenFile, os.Getenv)
	if err != nil {
		return err
	}
	log := cli.NewLogger(stderr, fc.level())
	if tok.Warning != "" {
		log.Warn("admin token: " + tok.Warning)
	}
	met := newMetrics()
	cfg, err := fc.config(tok.Value, log, met)
	if err != nil {
		return err
	}
	if tok.Value != "" {
		log.Info("calling the indexers' admin APIs with a bearer token", "source", tok.Source)
	}

	type listener struct{ name, flag, addr string }
	listeners := []listener{{"announce", "-listen", fc.Listen}, {"state", "-state-listen", fc.StateListen}}
	if fc.Metrics != "" {
		listeners = append(listeners, listener{"metrics", "-metrics", fc.Metrics})
	}
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for _, l := range listeners {
		ln, err := cli.Listen(l.addr, fc.MaxConns, fc.MaxConnsPerIP)
		if err != nil {
			closeAll()
			return fmt.Errorf("%s %s: %w", l.flag, l.addr, err)
		}
		lns = append(lns, ln)
	}
	if cfg.AllowPrivateAddrs {
		cli.WarnPrivateAddrs(log, "unknown publishers' heads")
	}
	policy, err := cfg.DialPolicy()
	if err != nil {
		closeAll()
		return fmt.Errorf("dial policy: %w", err)
	}
	rl := assignernode.Listeners{Announce: lns[0], State: lns[1]}
	closeHosts := func() {
		if rl.P2P != nil {
			rl.P2P.Close()
		}
		if rl.Verify != nil && rl.Verify != rl.P2P {
			rl.Verify.Close()
		}
	}
	if fc.P2P != "" {
		if rl.P2P, err = newHost(fc.P2P, policy); err != nil {
			closeAll()
			return fmt.Errorf("-p2p %s: %w", fc.P2P, err)
		}
	}
	if fc.P2PVerify {
		rl.Verify = rl.P2P
		if rl.Verify == nil {
			if rl.Verify, err = newHost("", policy); err != nil {
				closeAll()
				return fmt.Errorf("-p2p-verify: libp2p host: %w", err)
			}
		}
	}
	node, err := assignernode.New(ctx, cfg, rl)
	if err != nil {
		closeAll()
		closeHosts()
		return err
	}
	defer node.Close()
	met.receiverStats(node.Service().Receiver())
	met.serviceStats(node.Service())

	for i, ln := range lns {
		cli.LogListening(log, listeners[i].name, ln.Addr().String())
	}
	a := node.Addrs()
	for _, m := range a.P2P {
		cli.LogListening(log, "p2p", m.String())
	}
	log.Info("starting", "indexers", len(cfg.Service.Indexers), "replication", fc.Replication,
		"preset_replication", fc.PresetReplication, "poll_interval", fc.PollInterval.D().String(), "p2p", a.PeerID != "", "p2p_verify", fc.P2PVerify,
		"dial_policy", node.DialPolicy().String())

	eg, ctx := errgroup.WithContext(ctx)
	eg.Go(func() error { return node.Run(ctx) })
	if fc.Metrics != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(met.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
		httpserve.Serve(ctx, eg, "metrics", httpserve.NewServer(mux, log), lns[2], cfg.ShutdownTimeout)
	}
	return eg.Wait()
}
