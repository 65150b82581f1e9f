package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRun runs the demo briefly in goroutines on the memory store, with
// the default budget of indexer-0 off, and checks its output.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"--duration", "4s", "--refresh", "1s", "--publishers", "1", "--indexers", "1",
		"--store", "memory", "--entries", "5", "--interval", "200ms", "--freeze-budget", "0", "--dir", t.TempDir()}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut.String())
	}
	for _, want := range []string{"the pool is up", "/multihash/", "/sample/", "?seed=demo", "piece sample", "INDEXER", "indexer-0  active", "publisher-0", "── summary after",
		"publishers halted; every multihash of their truth through the front end"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
