package localpool

// Where the pool's roles listen, and the accessors of its files and logs.

import (
	"fmt"
	"path/filepath"
)

// LogLines returns the lines the current (or last) run of a role has
// logged: its first lines and its most recent ones. It is what a test
// prints when something failed.
func (p *Pool) LogLines(name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.roles[name]
	if r == nil || r.cur == nil {
		return nil
	}
	return r.cur.tap.Lines()
}

// WatchLog returns a channel that receives the key=value fields of the
// next line of the role's log, in this run or a later one, for which match
// holds (logtap.Fields parses the line); it receives at most one value.
// Lines written before the call are not considered. For example, to act
// in the middle of a handoff:
//
//	ch, _ := p.WatchLog(pool.RoleAssigner, func(f map[string]string) bool {
//		return f["msg"] == "decision" && f["kind"] == "handoff"
//	})
//	// ... freeze an indexer ...
//	<-ch
//	p.Kill(pool.RoleAssigner)
func (p *Pool) WatchLog(name string, match func(fields map[string]string) bool) (<-chan map[string]string, error) {
	r := p.role(name)
	if r == nil {
		return nil, fmt.Errorf("watch log %q: %w", name, ErrUnknownRole)
	}
	w := &watcher{match: match, found: make(chan map[string]string, 1)}
	r.log.mu.Lock()
	r.log.watch[w] = struct{}{}
	r.log.mu.Unlock()
	return w.found, nil
}

// URLs are the base URLs of the pool's APIs (no trailing slash).
type URLs struct {
	// Find is the scatter front end's IPNI find API: GET
	// /multihash/{mh}, /cid/{cid}, /providers.
	Find string
	// Piece is the piece sampler's API: GET /sample/{provider}/{piece},
	// /ingestion-status/{provider}.
	Piece string
	// AssignerAnnounce takes PUT /announce; AssignerState serves GET
	// /assignments and /indexers.
	AssignerAnnounce, AssignerState string
	// Indexers are every indexer's APIs, in pool order.
	Indexers []IndexerURLs
	// Publishers are the honest publishers' ipnisync (and GET /truth)
	// base URLs, publisher i at index i: those of role "publishers", then
	// those added by [Pool.AddPublishers]; Malicious those of the faulty
	// ones, in Config.Malicious order.
	Publishers, Malicious []string
}

// IndexerURLs are one indexer's APIs.
type IndexerURLs struct {
	Name                string
	Find, Ingest, Admin string
}

// URLs returns the pool's URLs. Ports are fixed at each role's first
// start, so the URLs stay valid across restarts.
func (p *Pool) URLs() URLs {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, s, pc := p.roles[RoleAssigner], p.roles[RoleScatter], p.roles[RolePiece]
	u := URLs{Find: s.url("find"), Piece: pc.url("api"),
		AssignerAnnounce: a.url("announce"), AssignerState: a.url("state")}
	for _, name := range p.indexers {
		r := p.roles[name]
		u.Indexers = append(u.Indexers, IndexerURLs{Name: name, Find: r.url("find"), Ingest: r.url("ingest"), Admin: r.url("admin")})
	}
	for _, name := range p.honest() {
		r := p.roles[name]
		for _, l := range r.listeners {
			u.Publishers = append(u.Publishers, r.url(l))
		}
	}
	for i := range p.cfg.Malicious {
		u.Malicious = append(u.Malicious, p.roles[MaliciousName(i)].url("publisher-0"))
	}
	return u
}

// AdminToken returns the bearer token the pool's indexers require on
// their admin API (also in Config.Dir/[AdminTokenFile]), for
// admin.WithClientToken.
func (p *Pool) AdminToken() string { return p.token }

// Dir returns the data directory of a role: Config.Dir/<name>.
func (p *Pool) Dir(name string) string { return filepath.Join(p.cfg.Dir, name) }

// Config returns the pool's configuration, with the defaults filled in.
func (p *Pool) Config() Config { return p.cfg }
