package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A rule says which packages of the module the non-test code of a package
// may import. Paths are relative to the module root: "store", "ingest/schema".
// A path ending in "/..." is a tree (the package and everything under it),
// "..." alone is the whole module, and "." is the root package.
//
// A package gets the most specific rule that matches it: an exact path beats
// a tree, and a longer tree beats a shorter one.
type rule struct {
	pkg   string   // package or tree the rule covers
	allow []string // packages or trees its non-test code may import
	tests []string // packages or trees its tests may import besides allow
	why   string   // the rule as DESIGN.md states it, quoted in failures
}

// rules is DESIGN.md's "Import rules" as a table. Add a row with each new
// package (or cover it by a tree); a package no row covers fails the test.
//
// Besides these rows, four rules hold for every package (see check):
// nothing but examples/... imports examples/..., backends or conformance
// suites (tests may import backends and suites), the heavy engines are
// imported only by their backend, and every package, leaves included, may
// import the package everyone names (it imports nothing of the module).
var rules = []rule{
	{pkg: ".", why: "the root package indexkit holds documentation only and imports nothing"},

	// The index and its backends.
	{pkg: "store", why: "store is a leaf: it imports no other package of the module"},
	{pkg: "store/internal/...", allow: []string{"store", "store/internal/..."},
		why: "store/internal/... imports only store and its siblings (kv keeps its samples with store/internal/sample)"},
	{pkg: "store/memory", allow: []string{"store", "store/internal/..."},
		why: "a store backend imports only store and store/internal/..."},
	{pkg: "store/pebble", allow: []string{"store", "store/internal/..."},
		why: "a store backend imports only store and store/internal/..."},
	{pkg: "store/leveldb", allow: []string{"store", "store/internal/..."},
		why: "a store backend imports only store and store/internal/..."},
	{pkg: "store/storetest", allow: []string{"store", "internal/testbed/lane"},
		why: "the store conformance suite imports only store, and the lane helper that marks its crash and long tests"},

	// Leaves of the other concerns.
	{pkg: "freeze", why: "freeze is a leaf: it imports no other package of the module"},
	{pkg: "lease", why: "lease is a leaf: it imports no other package of the module"},
	{pkg: "lease/memory", allow: []string{"lease"},
		why: "lease/memory, lease/redis and lease/leasetest import lease only"},
	{pkg: "lease/redis", allow: []string{"lease"},
		why: "lease/memory, lease/redis and lease/leasetest import lease only"},
	{pkg: "lease/etcd", allow: []string{"lease"},
		why: "lease/etcd, like lease/redis, imports lease only (and the etcd client)"},
	{pkg: "lease/leasetest", allow: []string{"lease"},
		why: "lease/memory, lease/redis and lease/leasetest import lease only"},
	{pkg: "lease/agent", allow: []string{"lease"},
		why: "lease/agent, the node agent, imports only lease: it runs over any backend it is given"},
	{pkg: "ingest/schema", why: "ingest/schema is a leaf: it imports no other package of the module"},
	{pkg: "ingest/metadata", why: "ingest/metadata is a leaf: it imports no other package of the module"},
	{pkg: "ingest/netpolicy", why: "ingest/netpolicy, the outbound dial policy, is a leaf: it imports no other package of the module (stdlib only)"},
	{pkg: "ingest/pace", why: "ingest/pace, the pacer that lets lookups go first, is a leaf: it imports no other package of the module (stdlib only); ingest and store/pebble take it through interfaces and functions of their own"},

	// DESIGN.md lists ingest/ipnisync and ingest/announce among "ingest/*"
	// without an arrow of their own; these two rows are the narrowest
	// reading: they build on the ingest leaves, not on ingest itself.
	{pkg: "ingest/ipnisync", allow: []string{"ingest/schema", "ingest/metadata", "ingest/netpolicy", "internal/..."},
		why: "ingest/ipnisync imports only ingest/schema, ingest/metadata, ingest/netpolicy (its clients dial through the policy) and internal/..."},
	{pkg: "ingest/announce", allow: []string{"ingest/schema", "ingest/metadata", "internal/..."},
		why: "ingest/announce imports only ingest/schema, ingest/metadata and internal/..."},

	// The packages that build on the leaves.
	{pkg: "ingest", allow: []string{"store", "ingest/...", "internal/..."},
		why: "ingest -> store, ingest/*"},
	{pkg: "handoff", allow: []string{"ingest", "ingest/...", "store", "store/...", "scatter/find", "freeze", "ingest/admin", "internal/..."},
		why: "handoff -> ingest, store (and their subpackages); scatter/find for the /providers model; and the leaves it implements the indexer's side of the admin contract with: ingest/admin (whose sentinels it shares) and freeze"},
	{pkg: "assigner/...", allow: []string{"ingest/admin", "ingest/announce", "ingest/ipnisync", "ingest/netpolicy", "assigner/...", "internal/..."},
		why: "assigner (and its subpackages) -> the admin contract ingest/admin, ingest/announce; and ingest/ipnisync with ingest/netpolicy to verify an unknown publisher's signed head before assigning it (never handoff: the contract is a leaf both import)"},
	{pkg: "ingest/chaingen", allow: []string{"store", "ingest/schema", "ingest/metadata"},
		why: "ingest/chaingen, the test bed of generated advertisement chains with ground truth, builds on the leaves store, ingest/schema and ingest/metadata"},
	{pkg: "ingest/admin", allow: []string{"freeze", "internal/httperr", "internal/localonly"},
		why: "ingest/admin, the indexer admin API contract, imports only the leaf freeze (its ErrDisabled is the contract's), internal/httperr (the shared StatusError) and internal/localonly (the guard of an API without a token): the indexer and the assigner both build on it"},
	{pkg: "scatter", allow: []string{"store", "scatter/find", "internal/..."},
		why: "scatter -> store, scatter/find"},
	{pkg: "scatter/keyspace", allow: []string{"store", "scatter", "scatter/find", "internal/..."},
		why: "scatter/keyspace, keyspace layouts, the write wire form and the coordinator, -> scatter (the ring), scatter/find, store"},
	{pkg: "scatter/keyspace/etcdlayout", allow: []string{"scatter/keyspace", "internal/..."},
		why: "scatter/keyspace/etcdlayout, the layout store on etcd, imports scatter/keyspace and internal/etcdjson (etcd's JSON gateway: the official client cannot be linked beside go-libp2p-pubsub)"},
	{pkg: "scatter/keyspace/layouttest", allow: []string{"scatter/keyspace"},
		why: "the layout store conformance suite imports only scatter/keyspace"},
	{pkg: "scatter/keyspace/writer/outbox", allow: []string{"internal/..."},
		why: "scatter/keyspace/writer/outbox, the durable queue of an ingest node, is a leaf: stdlib only"},
	{pkg: "scatter/keyspace/querynode", allow: []string{"store", "scatter", "scatter/find", "scatter/find/...", "scatter/keyspace", "internal/..."},
		why: "scatter/keyspace/querynode, a query node's write API over any store, -> scatter/keyspace and the find API"},
	{pkg: "scatter/keyspace/writer", allow: []string{"store", "scatter/find", "scatter/keyspace", "scatter/keyspace/writer/outbox", "scatter/keyspace/querynode", "internal/..."},
		why: "scatter/keyspace/writer, the ingest layer's store, -> scatter/keyspace and its outbox (and scatter/keyspace/querynode, the real receiver its tests write to)"},
	{pkg: "scatter/find", allow: []string{"store", "internal/..."},
		why: "scatter/find, the IPNI find API, -> store"},
	{pkg: "scatter/find/sample", allow: []string{"store", "internal/..."},
		why: "scatter/find/sample, the IPNI sampling API, -> store (its Sampler capability)"},
	{pkg: "scatter/find/health", allow: []string{"store", "internal/..."},
		why: "scatter/find/health, /health and /stats of the find listener, -> store (counts)"},
	{pkg: "scatter/routing", allow: []string{"store", "scatter/find", "ingest/metadata", "internal/..."},
		why: "scatter/routing, Delegated Routing V1 over any find backend, -> scatter/find (and store, its model), and the leaf ingest/metadata to name the protocols"},
	{pkg: "scatter/web", allow: []string{"internal/..."},
		why: "scatter/web, the front end's page and JSON status, reads the backends and the assigner over HTTP: it imports no public package of the module"},
	{pkg: "piece/...", allow: []string{"ingest", "ingest/...", "piece/...", "scatter/find", "internal/..."},
		why: "piece (and its subpackages) -> ingest and its subpackages (schema, metadata, ipnisync, announce); and scatter/find for the /providers model"},
	{pkg: "piece/memory", allow: []string{"piece"},
		why: "a piece store backend imports only piece"},
	{pkg: "piece/redis", allow: []string{"piece"},
		why: "a piece store backend imports only piece"},
	{pkg: "piece/piecetest", allow: []string{"piece"},
		why: "the piece store conformance suite imports only piece"},

	{pkg: "internal/...", allow: []string{"store", "freeze", "lease", "ingest/schema", "ingest/metadata", "ingest/netpolicy", "internal/..."},
		why: "internal/... imports no public package except the leaves (store, freeze, lease, ingest/schema, ingest/metadata, ingest/netpolicy)"},
	{pkg: everyone, tests: []string{"..."}, why: everyone + ", the kinds of error every package shares (invalid option, closed, run twice), " +
		"imports only the standard library, so that every package may import it (see check); its tests make errors of every library package"},
	{pkg: "examples/...", allow: []string{"..."},
		why: "examples/... may import anything; nothing imports examples"},
}

// everyone is the package every package of the module may import, whatever
// its row says: the sentinels of the kinds of error all packages share
// (errors.Is(err, ingest.ErrInvalidOption) holds for scatter's too) live
// there, and a leaf needs them as much as the rest.
const everyone = "internal/errkind"

// roles are the role packages under examples/ that are libraries
// (DESIGN.md: "no flag parsing, pprof, os/signal or global registration").
// Two rules hold for each: no package of the module it depends on imports
// programOnly, and none of its dependencies, third-party ones included, is
// in thirdPartyOnly unless the row exempts it and says why. Add each role
// package once its program has moved out.
var roles = []role{
	{pkg: "examples/indexernode", exempt: append(pebbleDeps, libp2pHost...)},
	{pkg: "examples/scatternode"},
	{pkg: "examples/querynode", exempt: pebbleDeps},
	{pkg: "examples/assignernode"},
	{pkg: "examples/piecenode"},
	{pkg: "examples/publishernode"},
	{pkg: "examples/localpool", exempt: append(pebbleDeps, libp2pHost...)},
	{pkg: "examples/fleetnode"},
	{pkg: "examples/fleetnode/codeindex"},
}

// role is one row of roles: the package, and the thirdPartyOnly
// dependencies it may have.
type role struct {
	pkg    string
	exempt []exemption
}

// exemption lets a role depend on a thirdPartyOnly path, for a reason that
// keeps the rule's intent (nothing registered behind the embedder's back).
type exemption struct{ path, why string }

// pebbleDeps are what Pebble brings: the Prometheus client for the types of
// its histograms (it registers none), and runtime/pprof for profile labels.
// interop's TestRolePackagesRegisterNothingGlobally checks at run time that
// nothing is registered.
var pebbleDeps = []exemption{
	{"github.com/prometheus/...", "through Pebble, which uses the client's histogram types and registers nothing"},
	{"expvar", "through the Prometheus client Pebble imports; nothing of ours publishes a variable"},
	{"runtime/pprof", "through Pebble's profile labels"},
}

// libp2pHost is what a role that builds its libp2p host from Config brings:
// the node takes a prometheus.Registerer for the host's metrics
// (Config.P2PMetrics), and go-libp2p's dependency injection (fx) imports
// os/signal without taking a signal.
var libp2pHost = []exemption{
	{"github.com/libp2p/go-libp2p", "the node builds its host from Config; metrics go to the injected Registerer"},
	{"os/signal", "through go-libp2p's fx, which installs no handler"},
}

// programOnly are what only a program imports: flag parsing, signals,
// profiles and global registration (net/http/pprof and expvar register on
// the default HTTP mux when imported, the Prometheus client holds the
// default registry), and the mains' own packages. A path ending in "/..."
// is a tree; module paths are relative to the module root.
var programOnly = struct{ std, module []string }{
	std: []string{"flag", "os/signal", "net/http/pprof", "expvar",
		// Serving metrics is the program's; a role may take an injected
		// prometheus.Registerer (the indexer's libp2p host does).
		"github.com/prometheus/client_golang/prometheus/promhttp", "github.com/prometheus/client_golang/prometheus/collectors"},
	module: []string{"examples/internal/cli", "examples/internal/cmd/..."},
}

// thirdPartyOnly are the dependencies a role may not have even through a
// third-party package, because importing them registers or installs
// something process-wide. flag is not among them: go-multihash's
// dependencies (klauspost/cpuid, go-multicodec) import it without defining
// a flag of the process.
var thirdPartyOnly = []struct{ path, why string }{
	{"net/http/pprof", "registers /debug/pprof/ on http.DefaultServeMux"},
	{"runtime/pprof", "profiling is the program's"},
	{"expvar", "registers /debug/vars on http.DefaultServeMux"},
	{"os/signal", "signals are the program's"},
	{"github.com/prometheus/...", "the client holds the default registry; metrics go through hooks"},
	{"github.com/libp2p/go-libp2p", "its constructor pulls Prometheus and expvar: hosts are passed in"},
}

// backends are the packages that implement a parent's interface. Only
// examples/... and tests import them: a parent never imports its backends.
// Add each new backend here.
var backends = []string{
	"store/memory", "store/pebble", "store/leveldb",
	"lease/memory", "lease/redis", "lease/etcd",
	"scatter/keyspace/etcdlayout",
	"piece/memory", "piece/redis",
	"examples/fleetnode/memory", "examples/fleetnode/redis", "examples/fleetnode/etcd",
}

// engines are heavy third-party modules that only one backend may import
// (besides examples/... and tests).
var engines = []struct {
	module string // module path; its packages are the path and below
	only   string // the one package of the module that may import it
	// support is a test-support package (imported only by tests) that
	// may import it too, to run the engine for the backend's tests.
	support string
}{
	{"github.com/cockroachdb/pebble", "store/pebble", ""}, // and pebble/v2, /vfs, ...
	{"github.com/ipfs/go-ds-leveldb", "store/leveldb", ""},
	{"github.com/syndtr/goleveldb", "store/leveldb", ""},
	{"go.etcd.io/etcd", "lease/etcd", "internal/testbed/etcdtest"}, // client/v3, api/v3
}

// engineOwners lists the packages that may import the engine package imp.
func engineOwners(imp string) []string {
	var out []string
	for _, e := range engines {
		if imp == e.module || strings.HasPrefix(imp, e.module+"/") {
			out = append(out, e.only)
			if e.support != "" {
				out = append(out, e.support)
			}
		}
	}
	return out
}

func engineOwner(imp, rel string) bool { return slices.Contains(engineOwners(imp), rel) }

// isSuite reports whether rel is a conformance suite (a package whose name
// ends in "test") or a public test bed: packages for tests and examples/...,
// never for the library's own code.
func isSuite(rel string) bool {
	return strings.HasSuffix(path.Base(rel), "test") || slices.Contains(testBeds, rel)
}

// testBeds are public packages that, like the conformance suites, only
// tests and examples/... import.
var testBeds = []string{"ingest/chaingen"}

func isExample(rel string) bool { return matches("examples/...", rel) }

func isBackend(rel string) bool { return slices.Contains(backends, rel) }

// specificity is -1 when pattern does not match the module-relative package
// rel, and otherwise grows with how narrowly pattern names rel.
func specificity(pattern, rel string) int {
	if pattern == "..." {
		return 0
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		if rel == tree || strings.HasPrefix(rel, tree+"/") {
			return 2 * len(tree)
		}
		return -1
	}
	if rel == pattern {
		return 2*len(pattern) + 1
	}
	return -1
}

func matches(pattern, rel string) bool { return specificity(pattern, rel) >= 0 }

// ruleFor returns the most specific rule covering rel.
func ruleFor(rel string) (rule, bool) {
	var best rule
	bestScore := -1
	for _, r := range rules {
		if s := specificity(r.pkg, rel); s > bestScore {
			best, bestScore = r, s
		}
	}
	return best, bestScore >= 0
}

func (r rule) allows(rel string) bool {
	return slices.ContainsFunc(r.allow, func(p string) bool { return matches(p, rel) })
}

func (r rule) String() string {
	allowed := "nothing from the module"
	if len(r.allow) > 0 {
		allowed = strings.Join(r.allow, ", ")
	}
	return "rule " + r.pkg + ": " + r.why + " (allowed: " + allowed + ")"
}

// The kinds of violation; TestImportRules runs one subtest per kind.
const (
	kindList        = "List"        // go list could not load a package
	kindCoverage    = "Coverage"    // a package no rule covers
	kindImports     = "Imports"     // non-test imports
	kindTestImports = "TestImports" // imports of _test.go files
	kindDeps        = "Deps"        // transitive dependencies of non-test code
	kindRoles       = "Roles"       // a role package that reaches program-only packages
)

var kinds = []string{kindList, kindCoverage, kindImports, kindTestImports, kindDeps, kindRoles}

type violation struct {
	kind string
	msg  string
}

// listedPackage holds the fields of `go list -json` that check reads.
type listedPackage struct {
	ImportPath   string
	Imports      []string // direct imports of non-test code
	TestImports  []string // direct imports of in-package _test.go files
	XTestImports []string // direct imports of package xxx_test files
	Deps         []string // transitive dependencies of non-test code
	Error        *struct{ Err string }
}

// check applies the rules to the packages of module mod and returns every
// violation, in package order.
func check(mod string, pkgs []listedPackage) []violation {
	var vs []violation
	add := func(kind, format string, args ...any) {
		vs = append(vs, violation{kind: kind, msg: fmt.Sprintf(format, args...)})
	}
	relOf := func(importPath string) (string, bool) {
		if importPath == mod {
			return ".", true
		}
		rel, ok := strings.CutPrefix(importPath, mod+"/")
		return rel, ok
	}

	for _, p := range pkgs {
		rel, ok := relOf(p.ImportPath)
		if !ok {
			continue // not ours
		}
		name := display(rel)
		if p.Error != nil {
			add(kindList, "%s: go list cannot load it, so its imports cannot be checked: %s", name, p.Error.Err)
		}
		r, covered := ruleFor(rel)
		if !covered {
			add(kindCoverage, "%s is not covered by any import rule: add a rule for it to the rules table in "+
				"internal/importrules/importrules_test.go, following DESIGN.md \"Import rules\"", name)
		}
		example := isExample(rel)

		// Non-test code.
		for _, imp := range p.Imports {
			irel, internal := relOf(imp)
			if !internal {
				for _, e := range engines {
					if (imp == e.module || strings.HasPrefix(imp, e.module+"/")) && !engineOwner(imp, rel) && !example {
						add(kindImports, "%s imports %s: only %s (and examples/..., and tests) may import %s, "+
							"so that importing a parent never drags in a heavy engine", name, imp, strings.Join(engineOwners(imp), ", "), e.module)
						break
					}
				}
				continue
			}
			switch {
			case example:
				// examples/... may import anything
			case isExample(irel):
				add(kindImports, "%s imports %s: nothing imports examples/... (rule examples/...: %s)",
					name, display(irel), ruleFor0("examples/...").why)
			case isBackend(irel):
				add(kindImports, "%s imports the backend %s: only examples/... and tests import backends; "+
					"a parent never imports its backends, take the interface instead", name, display(irel))
			case isSuite(irel):
				add(kindImports, "%s imports the conformance suite %s from non-test code: only tests and "+
					"examples/... import suites", name, display(irel))
			case irel == everyone:
				// every package may import it
			case covered && !r.allows(irel):
				add(kindImports, "%s imports %s, which its rule forbids: %s", name, display(irel), r)
			}
		}

		// Test code: the package's rule, plus backends, conformance suites,
		// internal/... and the package itself (package xxx_test imports it).
		for _, list := range []struct {
			field   string
			imports []string
		}{{"TestImports", p.TestImports}, {"XTestImports", p.XTestImports}} {
			for _, imp := range list.imports {
				irel, internal := relOf(imp)
				if !internal || example {
					continue // engines are fine in tests
				}
				switch {
				case isExample(irel):
					add(kindTestImports, "%s: its tests (%s) import %s: nothing imports examples/..., "+
						"not even tests; move what they need into a package", name, list.field, display(irel))
				case irel == rel, isBackend(irel), isSuite(irel), matches("internal/...", irel):
				case covered && !r.allows(irel) && !slices.ContainsFunc(r.tests, func(p string) bool { return matches(p, irel) }):
					add(kindTestImports, "%s: its tests (%s) import %s, which its rule forbids: %s; "+
						"tests may also import backends, conformance suites and internal/...",
						name, list.field, display(irel), r)
				}
			}
		}

		// Transitively: nothing outside examples/... depends on examples/....
		if !example {
			for _, dep := range p.Deps {
				drel, internal := relOf(dep)
				if internal && isExample(drel) && !slices.Contains(p.Imports, dep) {
					add(kindDeps, "%s depends on %s through its imports: nothing imports examples/...",
						name, display(drel))
				}
			}
		}
	}

	// Role packages are libraries: none of the module's code they run
	// imports what only a program imports, and none of their dependencies
	// is in thirdPartyOnly unless the role's row exempts it.
	byPath := make(map[string]listedPackage, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	for _, r := range roles {
		p, ok := byPath[mod+"/"+r.pkg]
		if !ok {
			continue // TestImportRules/Roles finds a row without a package
		}
		reported := map[string]bool{}
		for _, path := range append([]string{p.ImportPath}, p.Deps...) {
			q, ok := byPath[path]
			if !ok {
				continue // not ours
			}
			for _, imp := range q.Imports {
				irel, internal := relOf(imp)
				forbidden := slices.ContainsFunc(programOnly.std, func(pat string) bool { return matchesPath(pat, imp) })
				if internal {
					forbidden = slices.ContainsFunc(programOnly.module, func(pat string) bool { return matches(pat, irel) })
				}
				if !forbidden {
					continue
				}
				if internal {
					imp = display(irel)
				} else {
					reported[imp] = true
				}
				via := ""
				if q.ImportPath != p.ImportPath {
					via = " through " + display(strings.TrimPrefix(q.ImportPath, mod+"/"))
				}
				add(kindRoles, "the role package %s reaches %s%s: a role package is a library, and only its program "+
					"(examples/internal/cmd/...) parses flags, takes signals, serves profiles or registers globally",
					r.pkg, imp, via)
			}
		}
		for _, dep := range p.Deps {
			if _, ours := relOf(dep); ours || reported[dep] {
				continue // checked above, import by import
			}
			for _, f := range thirdPartyOnly {
				if !matchesPath(f.path, dep) || slices.ContainsFunc(r.exempt, func(e exemption) bool { return matchesPath(e.path, dep) }) {
					continue
				}
				add(kindRoles, "the role package %s depends on %s: %s (exempt it in the roles table, with the reason, "+
					"only if it registers nothing)", r.pkg, dep, f.why)
			}
		}
	}
	return vs
}

// matchesPath reports whether the import path imp is pattern, or under it
// when pattern ends in "/...".
func matchesPath(pattern, imp string) bool {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return imp == tree || strings.HasPrefix(imp, tree+"/")
	}
	return imp == pattern
}

// ruleFor0 is ruleFor for a pattern known to be in the table.
func ruleFor0(pkg string) rule {
	for _, r := range rules {
		if r.pkg == pkg {
			return r
		}
	}
	panic("importrules: no rule " + pkg)
}

func display(rel string) string {
	if rel == "." {
		return "the root package indexkit"
	}
	return rel
}

func TestImportRules(t *testing.T) {
	mod, pkgs := listModule(t)
	t.Logf("module %s: %d packages", mod, len(pkgs))
	vs := check(mod, pkgs)
	for _, r := range roles {
		if !slices.ContainsFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == mod+"/"+r.pkg }) {
			vs = append(vs, violation{kindRoles, fmt.Sprintf("the roles table names %s, which go list did not list: "+
				"fix the table in internal/importrules/importrules_test.go", r.pkg)})
		}
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			for _, v := range vs {
				if v.kind == kind {
					t.Error(v.msg)
				}
			}
		})
	}
}

// listModule lists every package of the module that holds this test, from
// the module root, with the fields check reads.
func listModule(t *testing.T) (mod string, pkgs []listedPackage) {
	t.Helper()
	gomod := strings.TrimSpace(string(goCmd(t, "", "env", "GOMOD")))
	if gomod == "" || gomod == os.DevNull {
		t.Fatalf("go env GOMOD = %q: not inside a module", gomod)
	}
	root := filepath.Dir(gomod)
	mod = strings.TrimSpace(string(goCmd(t, root, "list", "-m", "-f", "{{.Path}}")))
	out := goCmd(t, root, "list", "-e",
		"-json=ImportPath,Imports,TestImports,XTestImports,Deps,Error", "./...")
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list ./... in %s listed no packages", root)
	}
	return mod, pkgs
}

// goCmd runs the go command in dir, outside any workspace, and returns its
// standard output.
func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}
