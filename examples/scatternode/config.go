package scatternode

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Config is the typed configuration of a front end. Its zero value is
// not usable: start from [DefaultConfig] and set Backends (or Layout).
// [Config.Validate] checks it; New and Reload do so too.
//
// A Config round-trips through encoding/json, durations as nanoseconds,
// without its Logger and Hooks (`json:"-"`), so that a program can hand
// one to another process.
type Config struct {
	// Backends are the base URLs of the find APIs to scatter to (http or
	// https, with a host and no query, fragment or credentials; a path is
	// kept as a prefix). At least one. New normalises them (scheme and
	// host in lower case, no trailing slash); two URLs that normalise the
	// same are an error. The normalised URLs name the backends in logs and
	// in the hooks.
	Backends []string `json:",omitempty"`
	// Timeout is how long each backend may take per request.
	Timeout time.Duration
	// Ring, when not nil, shards the keyspace: each multihash is asked
	// only of the Replication backends that own it on a consistent-hash
	// ring of Vnodes points per backend (0: scatter.DefaultVnodes), and
	// the first of them to answer completely gives the answer. Nil asks
	// every backend and merges their answers.
	//
	// A ring gives complete answers only over backends whose data was
	// placed by the same ring (the query layer of package scatter/keyspace,
	// which Layout describes). Over a publisher-sharded pool, where each
	// indexer holds the multihashes of its publishers, the answers look
	// complete and are not.
	Ring *Ring `json:",omitempty"`
	// Layout, when not nil, is the keyspace-sharded query layer to read
	// from (a scatter/keyspace layout, as its file holds it): the backends are
	// the URLs of its read nodes (keyspace.Placement.ReadNodes) and the ring
	// its read ring (Placement.ReadRing), so that a Reload with the next
	// epoch's layout moves reads as the layout says. Backends must then be
	// empty or those URLs (as [Scatter.Config] returns them), and Ring nil.
	// The front end reports the layout's epoch at GET keyspace.PathStatus (0
	// without a layout).
	Layout *keyspace.Layout `json:",omitempty"`
	// Hedge, with a Ring or a Layout, asks a key's owners one after the
	// other: the next when Hedge passes without a complete answer, or at
	// once when those asked failed (scatter.WithHedge). 0 asks them all at
	// once.
	Hedge time.Duration `json:",omitempty"`
	// CacheEntries is the size of the result cache in answers; 0: no
	// cache (CacheTTL and CacheNegativeTTL are then unused).
	CacheEntries int `json:",omitempty"`
	// CacheTTL is how long a cached answer is kept (positive with a cache).
	CacheTTL time.Duration
	// CacheNegativeTTL is how long a cached "not found" is kept; 0: not
	// cached.
	CacheNegativeTTL time.Duration
	// AssignerURL, when set, is the base URL of the assigner's state API
	// (GET /indexers and /assignments, assignernode's state listener):
	// GET /status.json, and the page's pool view, then show the
	// publishers, who holds them and the handoffs in progress. An http or
	// https URL; empty: no assigner.
	AssignerURL string `json:",omitempty"`
	// ShutdownTimeout bounds how long requests in flight may take once
	// Run's context is done.
	ShutdownTimeout time.Duration
	// Logger receives the front end's log; nil discards it.
	Logger *slog.Logger `json:"-"`
	// Hooks observe the Gathers the front end builds (for metrics).
	Hooks Hooks `json:"-"`
	// Fenced, when not nil, is asked at the start and end of each lookup
	// whether the front end may answer as complete: while it reports
	// true, a lookup that would have been complete ends with a
	// *find.PartialError wrapping [ErrFenced], so a "not found" becomes a
	// 502 and results are marked incomplete (Cache-Control: no-store and
	// the X-IPNI-Backends header), never a 404 or a complete 200. A front
	// end over an etcd layout sets it to its presence's fence (cut off
	// from etcd longer than its lease could last: the coordinator may
	// have moved two epochs on without it). Like Logger and Hooks it is
	// New's; Reload keeps it.
	Fenced func() bool `json:"-"`
}

// Ring is the consistent-hash sharding of [Config.Ring] (the Ring object
// of examples/scatter's config file).
type Ring struct {
	// Vnodes is the number of ring points per backend (0: scatter.DefaultVnodes).
	Vnodes int `json:",omitempty"`
	// Replication is how many backends own each multihash: 1 to the
	// number of backends.
	Replication int
}

// Hooks observe the front end's Gathers: the one New builds, and each one
// [Scatter.Reload] swaps in. Every hook is optional; they are called from
// New, Reload and a goroutine of Run, never at once for one Gather.
type Hooks struct {
	// Gather returns the hooks of the Gather about to be built over
	// backends (the normalised URLs, in order: index i of a GatherHooks
	// callback is backends[i]).
	Gather func(backends []string) scatter.GatherHooks
	// Serving is called with a Gather as it starts to serve requests,
	// before New or Reload returns.
	Serving func(g *scatter.Gather)
	// Retired is called with a replaced Gather once the last request it
	// was serving has finished (not if Run ends first).
	Retired func(g *scatter.Gather)
}

// DefaultConfig returns the defaults of examples/scatter's flags: a 5s backend
// timeout, no ring, no cache (a 30s TTL and a 5s negative TTL once
// CacheEntries is set) and a 10s shutdown. Backends is empty.
func DefaultConfig() Config {
	return Config{
		Timeout:          scatter.DefaultBackendTimeout,
		CacheTTL:         30 * time.Second,
		CacheNegativeTTL: 5 * time.Second,
		ShutdownTimeout:  10 * time.Second,
	}
}

// Validate reports the first field of c at fault, naming it: what New and
// Reload would refuse.
func (c Config) Validate() error {
	_, err := c.normalized()
	return err
}

// normalized returns c with its backends normalised and its ring's
// default filled in, or an error naming the field at fault.
func (c Config) normalized() (Config, error) {
	switch {
	case c.Timeout <= 0:
		return c, fmt.Errorf("Timeout %v must be positive", c.Timeout)
	case c.CacheEntries < 0:
		return c, fmt.Errorf("CacheEntries %d must not be negative", c.CacheEntries)
	case c.CacheEntries > 0 && c.CacheTTL <= 0:
		return c, fmt.Errorf("CacheTTL %v must be positive", c.CacheTTL)
	case c.CacheNegativeTTL < 0:
		return c, fmt.Errorf("CacheNegativeTTL %v must not be negative", c.CacheNegativeTTL)
	case c.ShutdownTimeout <= 0:
		return c, fmt.Errorf("ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	case c.Hedge < 0:
		return c, fmt.Errorf("Hedge %v must not be negative", c.Hedge)
	}
	if c.AssignerURL != "" {
		u, err := normalizeURL("AssignerURL", c.AssignerURL)
		if err != nil {
			return c, err
		}
		c.AssignerURL = u
	}
	if c.Layout != nil {
		return c.normalizedLayout()
	}
	backends, ring, err := normalizeBackends(c.Backends, c.Ring)
	if err != nil {
		return c, err
	}
	c.Backends, c.Ring = backends, ring
	return c, nil
}

// normalizedLayout is normalized for a c with a Layout: its backends are
// the layout's read nodes.
func (c Config) normalizedLayout() (Config, error) {
	if c.Ring != nil {
		return c, errors.New("Ring must be nil with a Layout, which gives the ring")
	}
	p, err := keyspace.NewPlacement(*c.Layout)
	if err != nil {
		return c, fmt.Errorf("Layout: %w", err)
	}
	var raw []string
	for _, n := range p.ReadNodes() {
		raw = append(raw, n.URL)
	}
	backends, _, err := normalizeBackends(raw, nil)
	if err != nil {
		return c, fmt.Errorf("Layout (epoch %d): %w", c.Layout.Epoch, err)
	}
	if len(c.Backends) > 0 && !slices.Equal(c.Backends, backends) {
		return c, fmt.Errorf("Backends %q with a Layout, whose read nodes are %q: leave Backends empty", c.Backends, backends)
	}
	l := c.Layout.Clone()
	c.Layout, c.Backends = &l, backends
	return c, nil
}

// epoch is the epoch of c's layout, 0 without one.
func (c Config) epoch() uint64 {
	if c.Layout == nil {
		return 0
	}
	return c.Layout.Epoch
}

// normalizeBackends checks and normalises raw (see [Config.Backends]) and
// returns a copy of ring with its default filled in.
func normalizeBackends(raw []string, ring *Ring) ([]string, *Ring, error) {
	if len(raw) == 0 {
		return nil, nil, errors.New("Backends: none given; want at least one find API URL (or a Layout)")
	}
	var out []string
	seen := make(map[string]string, len(raw))
	for _, s := range raw {
		u, err := normalizeURL("backend", s)
		if err != nil {
			return nil, nil, err
		}
		if first, ok := seen[u]; ok {
			if first == s {
				return nil, nil, fmt.Errorf("backend %q is listed twice", s)
			}
			return nil, nil, fmt.Errorf("backend %q is listed twice (also as %q)", s, first)
		}
		seen[u] = s
		out = append(out, u)
	}
	if ring == nil {
		return out, nil, nil
	}
	r := *ring
	if r.Vnodes == 0 {
		r.Vnodes = scatter.DefaultVnodes
	}
	if r.Vnodes < 0 {
		return nil, nil, fmt.Errorf("Ring.Vnodes %d must be positive", r.Vnodes)
	}
	if r.Replication < 1 || r.Replication > len(out) {
		return nil, nil, fmt.Errorf("Ring.Replication %d must be between 1 and the number of backends, %d", r.Replication, len(out))
	}
	return out, &r, nil
}

// sameGather reports whether c and o build the same Gather, so that a
// reload from one to the other changes nothing.
func (c Config) sameGather(o Config) bool {
	return slices.Equal(c.Backends, o.Backends) && c.Timeout == o.Timeout &&
		(c.Ring == nil) == (o.Ring == nil) && (c.Ring == nil || *c.Ring == *o.Ring) && c.Hedge == o.Hedge &&
		(c.Layout == nil) == (o.Layout == nil) && (c.Layout == nil || reflect.DeepEqual(*c.Layout, *o.Layout)) &&
		c.CacheEntries == o.CacheEntries && c.CacheTTL == o.CacheTTL && c.CacheNegativeTTL == o.CacheNegativeTTL
}

// normalizeURL checks a base URL (what names it in errors: "backend",
// "AssignerURL") and returns its canonical form: scheme
// and host in lower case, no trailing slash. It refuses what NewHTTPBackend
// would silently drop (a query or fragment) and credentials, which would
// end up in logs and metric labels.
func normalizeURL(what, s string) (string, error) {
	if !strings.Contains(s, "://") {
		return "", fmt.Errorf("%s %q: want an http or https URL such as http://host:port", what, s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", what, s, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%s %q: scheme must be http or https", what, s)
	case u.Host == "":
		return "", fmt.Errorf("%s %q: no host", what, s)
	case u.User != nil:
		return "", fmt.Errorf("%s %q: credentials in URLs are not supported", what, s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%s %q: a base URL takes no query or fragment", what, s)
	}
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// DefaultLayoutHedge is the Hedge for a front end over a Layout (the
// -hedge of examples/scatter given a -layout): the
// primary owner of a key is asked alone, and the next one 2 ms later (or
// at once if it fails). Asking both at once cancels the slower request,
// which closes its connection (a new connection for nearly every lookup;
// BenchmarkGatherRing in package scatter measures both).
const DefaultLayoutHedge = 2 * time.Millisecond
