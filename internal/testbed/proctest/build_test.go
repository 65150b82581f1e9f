package proctest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// A second Build of a package that has not changed returns the same
// binary without linking it again (go build touches an up-to-date binary
// and replaces one it links anew, so the file stays the same file), and
// the binary outlives the test that built it.
func TestBuildReusesBinary(t *testing.T) {
	lane.Integration(t, "runs go build")
	var first string
	t.Run("first", func(t *testing.T) { first = proctest.Build(t, "./internal/testbed/lane/lanes") })
	st1, err := os.Stat(first)
	if err != nil {
		t.Fatalf("the binary is gone after the test that built it: %v", err)
	}
	second := proctest.Build(t, "./internal/testbed/lane/lanes")
	if second != first {
		t.Fatalf("second Build returned %s, want %s", second, first)
	}
	st2, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(st1, st2) {
		t.Errorf("the binary was replaced: go build linked it anew")
	}
	if filepath.Base(first) != "lanes" {
		t.Errorf("binary %s, want one named lanes", first)
	}
}
