package scatternode

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/indexkit/indexkit/internal/cli"
	"github.com/indexkit/indexkit/scatter"
)

// options are the command-line flags.
type options struct {
	listen, metrics string
	backends        []string // as given, in order
	configPath      string
	timeout         time.Duration
	timeoutSet      bool // -timeout was given explicitly: it wins over the file
	cacheEntries    int
	cacheTTL        time.Duration
	cacheNegTTL     time.Duration
	shutdownTimeout time.Duration
	logLevel        slog.Level
	maxConns        int
	maxConnsPerIP   int
}

// urlList is a flag.Value collecting comma-separated URLs; the flag may be
// repeated.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, ",") }

func (l *urlList) Set(s string) error {
	for u := range strings.SplitSeq(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			*l = append(*l, u)
		}
	}
	return nil
}

// parseFlags parses args (without the program name). Usage and flag errors
// go to stderr; -h returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("scatter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scatter -backends URL[,URL...] | -config FILE [flags]")
		fmt.Fprintln(fs.Output(), "Serves the IPNI find API over a scatter/gather of find API backends. Flags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "`address` of the find API (port 0 picks a free port)")
	fs.StringVar(&o.metrics, "metrics", "127.0.0.1:8081", "`address` of the Prometheus /metrics endpoint (\"\" disables it)")
	var backends urlList
	fs.Var(&backends, "backends", "comma-separated find API base `URLs` (may be repeated; added to the config file's)")
	fs.StringVar(&o.configPath, "config", "", "config `file`: a JSON array of backend URLs, or {\"Backends\":[...],\"Timeout\":\"5s\",\"Ring\":{\"Vnodes\":256,\"Replication\":2}}; re-read on SIGHUP")
	fs.DurationVar(&o.timeout, "timeout", scatter.DefaultBackendTimeout, "how long each backend may take per request (given explicitly, it overrides the config file's Timeout)")
	fs.IntVar(&o.cacheEntries, "cache", 0, "result cache size in `entries` (0: no cache)")
	fs.DurationVar(&o.cacheTTL, "cache-ttl", 30*time.Second, "how long a cached answer is kept")
	fs.DurationVar(&o.cacheNegTTL, "cache-negative-ttl", 5*time.Second, "how long a cached \"not found\" is kept (0: not cached)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long requests in flight may take to finish on SIGINT/SIGTERM")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	o.maxConns, o.maxConnsPerIP = cli.DefaultMaxConns, cli.DefaultMaxConnsPerIP
	cli.ConnLimitFlags(fs, &o.maxConns, &o.maxConnsPerIP)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "timeout" {
			o.timeoutSet = true
		}
	})
	o.backends = backends
	switch {
	case o.listen == "":
		return nil, errors.New("-listen must not be empty")
	case o.timeout <= 0:
		return nil, fmt.Errorf("-timeout %v must be positive", o.timeout)
	case o.cacheEntries < 0:
		return nil, fmt.Errorf("-cache %d must not be negative", o.cacheEntries)
	case o.cacheEntries > 0 && o.cacheTTL <= 0:
		return nil, fmt.Errorf("-cache-ttl %v must be positive", o.cacheTTL)
	case o.cacheNegTTL < 0:
		return nil, fmt.Errorf("-cache-negative-ttl %v must not be negative", o.cacheNegTTL)
	case o.shutdownTimeout <= 0:
		return nil, fmt.Errorf("-shutdown-timeout %v must be positive", o.shutdownTimeout)
	}
	if err := cli.CheckConnLimits(o.maxConns, o.maxConnsPerIP); err != nil {
		return nil, err
	}
	if o.configPath == "" && len(o.backends) == 0 {
		return nil, errors.New("no backends: give -backends or -config (see -h)")
	}
	return o, nil
}

// ringConfig is the Ring object of the config file.
type ringConfig struct {
	// Vnodes is the number of ring points per backend (0: scatter.DefaultVnodes).
	Vnodes int
	// Replication is how many backends own each multihash.
	Replication int
}

// fileConfig is the object form of the config file.
type fileConfig struct {
	Backends []string
	Timeout  string // a Go duration, such as "5s"
	Ring     *ringConfig
}

// config is what one Gather is built from: the flags and the config file,
// validated and normalised.
type config struct {
	Backends []string // normalised URLs, unique, in order: flags first, then the file
	Timeout  time.Duration
	Ring     *ringConfig // nil: ask every backend
}

func (c config) equal(o config) bool {
	return slices.Equal(c.Backends, o.Backends) && c.Timeout == o.Timeout &&
		(c.Ring == nil) == (o.Ring == nil) && (c.Ring == nil || *c.Ring == *o.Ring)
}

// parseConfigFile parses a config file: either a JSON array of URLs (the
// indexstar format) or a fileConfig object (unknown fields are an error).
func parseConfigFile(data []byte) (fileConfig, error) {
	var fc fileConfig
	data = bytes.TrimSpace(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	var err error
	switch {
	case len(data) == 0:
		return fc, errors.New("empty file")
	case data[0] == '[':
		err = dec.Decode(&fc.Backends)
	case data[0] == '{':
		dec.DisallowUnknownFields()
		err = dec.Decode(&fc)
	default:
		return fc, errors.New(`want a JSON array of backend URLs or an object {"Backends":[...]}`)
	}
	if err != nil {
		return fc, err
	}
	if dec.More() {
		return fc, errors.New("data after the JSON value")
	}
	return fc, nil
}

// loadConfig reads the config file, if any, and merges it with the flags:
// the backends of both, in that order; the file's Timeout unless -timeout
// was given explicitly; the file's Ring.
func loadConfig(o *options) (config, error) {
	cfg := config{Timeout: o.timeout}
	raw := slices.Clone(o.backends)
	if o.configPath != "" {
		data, err := os.ReadFile(o.configPath)
		if err != nil {
			return config{}, fmt.Errorf("config: %w", err)
		}
		fc, err := parseConfigFile(data)
		if err != nil {
			return config{}, fmt.Errorf("config file %s: %w", o.configPath, err)
		}
		raw = append(raw, fc.Backends...)
		if fc.Timeout != "" && !o.timeoutSet {
			d, err := time.ParseDuration(fc.Timeout)
			if err != nil || d <= 0 {
				return config{}, fmt.Errorf("config file %s: Timeout %q must be a positive duration such as \"5s\"", o.configPath, fc.Timeout)
			}
			cfg.Timeout = d
		}
		if fc.Ring != nil {
			r := *fc.Ring
			cfg.Ring = &r
		}
	}
	if len(raw) == 0 {
		return config{}, errors.New("no backends: give -backends or list them in the config file")
	}
	seen := make(map[string]string, len(raw))
	for _, s := range raw {
		u, err := normalizeURL(s)
		if err != nil {
			return config{}, err
		}
		if first, ok := seen[u]; ok {
			if first == s {
				return config{}, fmt.Errorf("backend %q is listed twice", s)
			}
			return config{}, fmt.Errorf("backend %q is listed twice (also as %q)", s, first)
		}
		seen[u] = s
		cfg.Backends = append(cfg.Backends, u)
	}
	if r := cfg.Ring; r != nil {
		if r.Vnodes == 0 {
			r.Vnodes = scatter.DefaultVnodes
		}
		if r.Vnodes < 0 {
			return config{}, fmt.Errorf("Ring.Vnodes %d must be positive", r.Vnodes)
		}
		if r.Replication < 1 || r.Replication > len(cfg.Backends) {
			return config{}, fmt.Errorf("Ring.Replication %d must be between 1 and the number of backends, %d", r.Replication, len(cfg.Backends))
		}
	}
	return cfg, nil
}

// normalizeURL checks a backend URL and returns its canonical form: scheme
// and host in lower case, no trailing slash. It refuses what NewHTTPBackend
// would silently drop (a query or fragment) and credentials, which would
// end up in logs and metric labels.
func normalizeURL(s string) (string, error) {
	if !strings.Contains(s, "://") {
		return "", fmt.Errorf("backend %q: want an http or https URL such as http://host:port", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("backend %q: %w", s, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("backend %q: scheme must be http or https", s)
	case u.Host == "":
		return "", fmt.Errorf("backend %q: no host", s)
	case u.User != nil:
		return "", fmt.Errorf("backend %q: credentials in URLs are not supported", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("backend %q: a base URL takes no query or fragment", s)
	}
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}
