package interop

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// requireLine is a requirement of a go.mod: in a require block or on a
// require line, path, version and whether it is indirect.
var requireLine = regexp.MustCompile(`(?m)^(?:require\s+|\t)(\S+)\s+(v\S+)(\s+// indirect)?`)

// requires reads the requirements of the go.mod at path; with direct
// only those not marked indirect.
func requires(t *testing.T, path string, direct bool) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range requireLine.FindAllStringSubmatch(string(b), -1) {
		if !direct || r[3] == "" {
			m[r[1]] = r[2]
		}
	}
	return m
}

// TestPinnedVersions: this module embeds indexkit as an embedder's module
// would, with exactly the versions indexkit's go.mod pins of every module
// it requires directly (go-libp2p, go-multihash, go-cid...): the embedding tests
// run what the README tells embedders to require, not the newer ones a
// bare `go mod tidy` picks. And the README names the pinned go-libp2p and
// go-multihash.
func TestPinnedVersions(t *testing.T) {
	// indexkit's own requirements: those of its dependencies may be
	// raised by boxo's and go-libipni's here, as in any embedder.
	root, here := requires(t, "../go.mod", true), requires(t, "go.mod", false)
	for _, must := range []string{"github.com/libp2p/go-libp2p", "github.com/multiformats/go-multihash"} {
		if root[must] == "" || here[must] == "" {
			t.Fatalf("%s: indexkit requires %q, interop %q; want both", must, root[must], here[must])
		}
	}
	for path, v := range here {
		if rv, ok := root[path]; ok && rv != v {
			t.Errorf("interop requires %s %s, indexkit pins %s", path, v, rv)
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"github.com/libp2p/go-libp2p", "github.com/multiformats/go-multihash"} {
		if want := path + "@" + root[path]; !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not tell embedders to require %s", want)
		}
	}
}
