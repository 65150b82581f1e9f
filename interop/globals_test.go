package interop_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rolePackages are the node packages under examples/: libraries that a
// program embeds, as the binaries under examples/ do.
var rolePackages = []string{
	"github.com/indexkit/indexkit/examples/indexernode",
	"github.com/indexkit/indexkit/examples/scatternode",
	"github.com/indexkit/indexkit/examples/querynode",
	"github.com/indexkit/indexkit/examples/assignernode",
	"github.com/indexkit/indexkit/examples/piecenode",
	"github.com/indexkit/indexkit/examples/publishernode",
	"github.com/indexkit/indexkit/examples/localpool",
	"github.com/indexkit/indexkit/examples/fleetnode",
	"github.com/indexkit/indexkit/examples/fleetnode/codeindex",
}

// commandLine are the packages that belong to a program, not to a
// library: a role package imports none of them, directly or not (pprof
// registers on the default mux when imported). expvar, which registers
// /debug/vars, is not among them: Prometheus's client imports it, and
// go-libp2p imports that client, so every program with a libp2p host has
// it.
var commandLine = map[string]string{
	"net/http/pprof": "pprof registers /debug/pprof/ on http.DefaultServeMux when imported",
	"github.com/indexkit/indexkit/examples/internal/cli": "the mains' CLI kit",
}

// directOnly are imports a role package must not make itself, though a
// dependency may (flag parsing and signals are the program's).
var directOnly = []string{"flag", "os/signal", "github.com/prometheus/client_golang/prometheus/promhttp"}

func TestRolePackagesAreLibraries(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for _, pkg := range rolePackages {
		short := pkg[strings.LastIndex(pkg, "/")+1:]
		deps := goList(ctx, t, "-deps", pkg)
		for _, d := range deps {
			if why, ok := commandLine[d]; ok {
				t.Errorf("%s depends on %s (%s)", short, d, why)
			}
			if strings.HasPrefix(d, "github.com/indexkit/indexkit/examples/internal/cmd/") {
				t.Errorf("%s depends on the program %s", short, d)
			}
		}
		imports := goList(ctx, t, "-f", `{{join .Imports "\n"}}`, pkg)
		for _, imp := range imports {
			for _, bad := range directOnly {
				if imp == bad {
					t.Errorf("%s imports %s: that is the program's job (examples/internal/cmd/...)", short, imp)
				}
			}
		}
	}
}

// TestRolePackagesRegisterNothingGlobally runs a program that imports
// every role package and runs an indexer node with a libp2p host, and
// reads what ended up in process-wide state.
func TestRolePackagesRegisterNothingGlobally(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program (integration lane; -short is the unit lane)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", "./internal/globalcheck").CombinedOutput()
	if err != nil {
		t.Fatalf("globalcheck: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "no process-wide registration") {
		t.Fatalf("globalcheck:\n%s", out)
	}
}

func goList(ctx context.Context, t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	return strings.Fields(string(out))
}
