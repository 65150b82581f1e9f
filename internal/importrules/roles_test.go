package importrules

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// libraryRoles are the role packages under examples/ that are libraries:
// a program maps flags onto their Config, and importing one brings in no
// command-line machinery and nothing that registers itself globally.
// A role joins the list once its program has moved out of it.
var libraryRoles = []string{
	"examples/assignernode",
	"examples/piecenode",
	"examples/publishernode",
}

// roleForbidden are the dependencies a library role must not have, even
// transitively, with the reason. flag is not among them: go-multihash's
// dependencies (klauspost/cpuid, go-multicodec) import it, without
// defining a flag of the process.
var roleForbidden = []struct{ path, why string }{
	{"net/http/pprof", "registers /debug/pprof/ on http.DefaultServeMux"},
	{"runtime/pprof", "profiling is the program's"},
	{"expvar", "registers /debug/vars on http.DefaultServeMux"},
	{"os/signal", "signals are the program's"},
	{"github.com/prometheus/...", "registers collectors in the default registry; metrics go through hooks"},
	{"github.com/libp2p/go-libp2p", "its constructor pulls Prometheus and expvar: hosts are passed in"},
	{"github.com/indexkit/indexkit/examples/internal/cli", "the mains' CLI kit"},
}

// checkRoles returns a message for every forbidden dependency of the
// library roles of module mod, and for a library role go list did not
// list.
func checkRoles(mod string, pkgs []listedPackage) []string {
	var out []string
	for _, role := range libraryRoles {
		i := slices.IndexFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == mod+"/"+role })
		if i < 0 {
			out = append(out, fmt.Sprintf("%s: not listed", role))
			continue
		}
		for _, dep := range pkgs[i].Deps {
			for _, f := range roleForbidden {
				prefix, tree := strings.CutSuffix(f.path, "/...")
				if dep == prefix || (tree && strings.HasPrefix(dep, prefix+"/")) {
					out = append(out, fmt.Sprintf("%s depends on %s: %s", role, dep, f.why))
				}
			}
		}
	}
	return out
}

// TestImportRulesRoles: the library roles depend on no flag parsing,
// profiling, signal handling, Prometheus or CLI kit, so that an embedder
// importing one gets nothing registered behind its back.
func TestImportRulesRoles(t *testing.T) {
	mod, pkgs := listModule(t)
	for _, msg := range checkRoles(mod, pkgs) {
		t.Error(msg)
	}
}

// TestImportRulesRolesCheck: checkRoles finds a forbidden dependency,
// a package or one under a forbidden tree, and a role that is missing.
func TestImportRulesRolesCheck(t *testing.T) {
	const mod = "example.com/m"
	roles := func(extra ...string) []listedPackage {
		var pkgs []listedPackage
		for _, r := range libraryRoles {
			pkgs = append(pkgs, listedPackage{ImportPath: mod + "/" + r,
				Deps: append([]string{"flag", "net/http", "github.com/prometheus-like/x"}, extra...)})
		}
		return pkgs
	}
	if got := checkRoles(mod, roles()); len(got) != 0 {
		t.Fatalf("clean roles: %q", got)
	}
	got := checkRoles(mod, roles("github.com/prometheus/client_golang/prometheus", "expvar"))
	if len(got) != 2*len(libraryRoles) {
		t.Fatalf("checkRoles = %q, want two messages per role", got)
	}
	for _, w := range []string{
		libraryRoles[0] + " depends on expvar: ",
		libraryRoles[0] + " depends on github.com/prometheus/client_golang/prometheus: ",
	} {
		if !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, w) }) {
			t.Errorf("checkRoles = %q, want one starting %q", got, w)
		}
	}
	if got := checkRoles(mod, roles()[1:]); len(got) != 1 || got[0] != libraryRoles[0]+": not listed" {
		t.Errorf("a missing role: %q", got)
	}
}
