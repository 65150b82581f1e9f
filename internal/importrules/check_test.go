package importrules

import (
	"slices"
	"strings"
	"testing"
)

// TestImportRulesCheck feeds check fake package lists, so that the rule
// checking itself is seen to fail when it should (and only then). Its name
// starts with TestImportRules so that `go test -run TestImportRules` runs it.
func TestImportRulesCheck(t *testing.T) {
	const mod = "example.com/m"
	m := func(rels ...string) []string {
		var out []string
		for _, r := range rels {
			if r == "." {
				out = append(out, mod)
				continue
			}
			out = append(out, mod+"/"+r)
		}
		return out
	}
	// want is one expected violation: its kind, and words its message must
	// contain (the package, the forbidden import, the rule).
	type want struct {
		kind  string
		words []string
	}
	tests := []struct {
		name string
		pkgs []listedPackage
		want []want
	}{{
		name: "clean",
		pkgs: []listedPackage{
			{ImportPath: mod},
			{ImportPath: mod + "/store", Imports: []string{"context", "github.com/multiformats/go-multihash"},
				XTestImports: m("store", "store/memory", "internal/fixture")},
			{ImportPath: mod + "/store/internal/kv", Imports: m("store")},
			{ImportPath: mod + "/store/pebble", Imports: append(m("store", "store/internal/kv"), "github.com/cockroachdb/pebble/v2/vfs"),
				XTestImports: m("store", "store/pebble", "store/storetest")},
			{ImportPath: mod + "/store/leveldb", Imports: append(m("store/internal/kv"), "github.com/ipfs/go-ds-leveldb", "github.com/syndtr/goleveldb/leveldb/util")},
			{ImportPath: mod + "/store/storetest", Imports: m("store")},
			{ImportPath: mod + "/lease/redis", Imports: m("lease"), XTestImports: m("lease/leasetest", "lease/redis")},
			{ImportPath: mod + "/ingest", Imports: m("store", "ingest/schema", "ingest/announce", "internal/clock"),
				TestImports: append(m("store/memory"), "github.com/cockroachdb/pebble/v2")},
			{ImportPath: mod + "/handoff", Imports: m("ingest", "ingest/ipnisync", "store")},
			{ImportPath: mod + "/assigner/service", Imports: m("assigner", "ingest/admin", "ingest/announce")},
			{ImportPath: mod + "/piece/redisstore", Imports: m("piece", "ingest/metadata")},
			{ImportPath: mod + "/internal/clock", Imports: m("freeze", "internal/other")},
			{ImportPath: mod + "/examples/pool", Imports: append(m("store/pebble", "store/storetest", "examples/internal/x", "lease/redis"), "github.com/cockroachdb/pebble/v2"),
				Deps: m("examples/internal/x", "store")},
			{ImportPath: "other.org/notours", Imports: m("examples/pool")}, // not in the module: ignored
		},
	}, {
		name: "leaf imports a sibling",
		pkgs: []listedPackage{{ImportPath: mod + "/store", Imports: m("ingest")}},
		want: []want{{kindImports, []string{"store imports ingest", "rule store:", "leaf"}}},
	}, {
		name: "parent imports its backend",
		pkgs: []listedPackage{{ImportPath: mod + "/lease", Imports: m("lease/redis")}},
		want: []want{{kindImports, []string{"lease imports the backend lease/redis", "never imports its backends"}}},
	}, {
		name: "sibling imports a backend",
		pkgs: []listedPackage{{ImportPath: mod + "/ingest", Imports: m("store/pebble")}},
		want: []want{{kindImports, []string{"ingest imports the backend store/pebble"}}},
	}, {
		name: "backend imports another backend",
		pkgs: []listedPackage{{ImportPath: mod + "/store/pebble", Imports: m("store/memory")}},
		want: []want{{kindImports, []string{"store/pebble imports the backend store/memory"}}},
	}, {
		name: "non-test code imports a suite",
		pkgs: []listedPackage{{ImportPath: mod + "/store/memory", Imports: m("store/storetest")}},
		want: []want{{kindImports, []string{"store/memory imports the conformance suite store/storetest"}}},
	}, {
		name: "suite imports beyond its parent",
		pkgs: []listedPackage{{ImportPath: mod + "/lease/leasetest", Imports: m("lease", "store")}},
		want: []want{{kindImports, []string{"lease/leasetest imports store", "rule lease/leasetest:", "allowed: lease)"}}},
	}, {
		name: "internal imports a public non-leaf",
		pkgs: []listedPackage{{ImportPath: mod + "/internal/chain", Imports: m("store", "ingest")}},
		want: []want{{kindImports, []string{"internal/chain imports ingest", "rule internal/...:"}}},
	}, {
		name: "assigner imports beyond its arrows",
		pkgs: []listedPackage{{ImportPath: mod + "/assigner", Imports: m("handoff", "scatter")}},
		want: []want{
			{kindImports, []string{"assigner imports handoff", "rule assigner/...:", "never handoff"}},
			{kindImports, []string{"assigner imports scatter", "rule assigner/...:", "ingest/admin, ingest/announce"}},
		},
	}, {
		name: "root imports something",
		pkgs: []listedPackage{{ImportPath: mod, Imports: m("store")}},
		want: []want{{kindImports, []string{"the root package indexkit imports store"}}},
	}, {
		name: "engine outside its backend",
		pkgs: []listedPackage{
			{ImportPath: mod + "/scatter", Imports: []string{"github.com/cockroachdb/pebble"}},
			{ImportPath: mod + "/store/internal/kv", Imports: []string{"github.com/syndtr/goleveldb/leveldb"}},
			{ImportPath: mod + "/store/pebble", Imports: []string{"github.com/ipfs/go-ds-leveldb"}},
		},
		want: []want{
			{kindImports, []string{"scatter imports github.com/cockroachdb/pebble", "only store/pebble"}},
			{kindImports, []string{"store/internal/kv imports github.com/syndtr/goleveldb/leveldb", "only store/leveldb"}},
			{kindImports, []string{"store/pebble imports github.com/ipfs/go-ds-leveldb", "only store/leveldb"}},
		},
	}, {
		name: "package without a rule",
		pkgs: []listedPackage{
			{ImportPath: mod + "/newthing"},
			{ImportPath: mod + "/scatter/cache", Imports: m("examples/scatter")},
		},
		want: []want{
			{kindCoverage, []string{"newthing is not covered by any import rule", "add a rule"}},
			{kindCoverage, []string{"scatter/cache is not covered"}},
			{kindImports, []string{"scatter/cache imports examples/scatter", "nothing imports examples"}},
		},
	}, {
		name: "examples imported",
		pkgs: []listedPackage{
			{ImportPath: mod + "/piece", Imports: m("examples/piece", "ingest"),
				Deps: m("examples/piece", "examples/internal/wiring", "ingest")},
		},
		want: []want{
			{kindImports, []string{"piece imports examples/piece", "nothing imports examples"}},
			{kindDeps, []string{"piece depends on examples/internal/wiring"}},
		},
	}, {
		name: "tests import beyond the rule",
		pkgs: []listedPackage{
			{ImportPath: mod + "/store", TestImports: m("ingest"), XTestImports: m("store", "store/memory", "examples/indexer")},
			{ImportPath: mod + "/freeze", XTestImports: m("lease")},
		},
		want: []want{
			{kindTestImports, []string{"store: its tests (TestImports) import ingest", "rule store:"}},
			{kindTestImports, []string{"store: its tests (XTestImports) import examples/indexer"}},
			{kindTestImports, []string{"freeze: its tests (XTestImports) import lease", "rule freeze:"}},
		},
	}, {
		name: "role packages are libraries",
		pkgs: []listedPackage{
			{ImportPath: mod + "/examples/scatternode", Imports: append(m("internal/serve", "examples/internal/cli"), "flag", "net/http"),
				Deps: append(m("internal/serve", "examples/internal/cli"), "flag", "net/http", "os/signal", "github.com/multiformats/go-multicodec")},
			{ImportPath: mod + "/internal/serve", Imports: []string{"net/http", "os/signal", "github.com/prometheus/client_golang/prometheus/promhttp"}},
			{ImportPath: mod + "/examples/internal/cli", Imports: []string{"flag", "os/signal"}},
			// A third-party package that imports flag is not checked.
			{ImportPath: mod + "/examples/querynode", Imports: []string{"github.com/multiformats/go-multicodec"},
				Deps: []string{"flag", "github.com/multiformats/go-multicodec"}},
			// A role whose dependencies (third-party included) reach
			// something that registers globally, but one its row exempts.
			{ImportPath: mod + "/examples/piecenode", Imports: []string{"github.com/x/lib"},
				Deps: []string{"github.com/x/lib", "expvar", "github.com/prometheus/client_golang/prometheus", "net/http/pprof"}},
			{ImportPath: mod + "/examples/indexernode", Imports: []string{"github.com/cockroachdb/pebble/v2"},
				Deps: []string{"github.com/cockroachdb/pebble/v2", "github.com/prometheus/client_golang/prometheus", "expvar", "net/http/pprof"}},
			// Nor is a package that is not a role (a program).
			{ImportPath: mod + "/examples/internal/cmd/indexercmd", Imports: append(m("examples/internal/cli"), "flag", "net/http/pprof")},
		},
		want: []want{
			{kindRoles, []string{"examples/indexernode depends on net/http/pprof: "}},
			{kindRoles, []string{"the role package examples/scatternode reaches examples/internal/cli:", "only its program"}},
			{kindRoles, []string{"examples/scatternode reaches flag:"}},
			{kindRoles, []string{"examples/scatternode reaches os/signal through internal/serve"}},
			{kindRoles, []string{"examples/scatternode reaches github.com/prometheus/client_golang/prometheus/promhttp through internal/serve"}},
			{kindRoles, []string{"examples/scatternode reaches flag through examples/internal/cli"}},
			{kindRoles, []string{"examples/scatternode reaches os/signal through examples/internal/cli"}},
			{kindRoles, []string{"examples/piecenode depends on expvar: registers /debug/vars"}},
			{kindRoles, []string{"examples/piecenode depends on github.com/prometheus/client_golang/prometheus: ", "default registry"}},
			{kindRoles, []string{"examples/piecenode depends on net/http/pprof: "}},
		},
	}, {
		name: "go list error",
		pkgs: []listedPackage{{ImportPath: mod + "/store", Error: &struct{ Err string }{"syntax error"}}},
		want: []want{{kindList, []string{"store: go list cannot load it", "syntax error"}}},
	}}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := check(mod, tt.pkgs)
			if len(got) != len(tt.want) {
				t.Errorf("got %d violations, want %d:", len(got), len(tt.want))
				for _, v := range got {
					t.Logf("  %s: %s", v.kind, v.msg)
				}
				return
			}
			for i, w := range tt.want {
				v := got[i]
				if v.kind != w.kind {
					t.Errorf("violation %d is of kind %s, want %s: %s", i, v.kind, w.kind, v.msg)
				}
				for _, word := range w.words {
					if !strings.Contains(v.msg, word) {
						t.Errorf("violation %d does not say %q: %s", i, word, v.msg)
					}
				}
			}
		})
	}
}

// TestImportRulesTable checks the table itself: one row per pattern, every
// pattern well formed, every rule explained, every backend and engine owner
// covered by a rule.
func TestImportRulesTable(t *testing.T) {
	wellFormed := func(p string) bool {
		if p == "." || p == "..." {
			return true
		}
		p = strings.TrimSuffix(p, "/...")
		return p != "" && !strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/") &&
			!strings.Contains(p, "//") && !strings.Contains(p, "...") && !strings.Contains(p, ".")
	}
	var seen []string
	for _, r := range rules {
		if slices.Contains(seen, r.pkg) {
			t.Errorf("two rules for %s", r.pkg)
		}
		seen = append(seen, r.pkg)
		if !wellFormed(r.pkg) || r.pkg == "..." {
			t.Errorf("rule %q: malformed package pattern", r.pkg)
		}
		for _, a := range r.allow {
			if !wellFormed(a) || a == "." {
				t.Errorf("rule %s: malformed allowed pattern %q", r.pkg, a)
			}
		}
		if r.why == "" {
			t.Errorf("rule %s: no why", r.pkg)
		}
	}
	for _, b := range backends {
		if _, ok := ruleFor(b); !ok {
			t.Errorf("backend %s has no rule", b)
		}
	}
	for _, e := range engines {
		if _, ok := ruleFor(e.only); !ok {
			t.Errorf("engine owner %s has no rule", e.only)
		}
	}
}
