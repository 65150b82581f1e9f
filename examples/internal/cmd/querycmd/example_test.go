package querycmd_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/querycmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// The query program in a goroutine on a free port, over a layout file
// that names it alone: it answers its health check, and a cancel stops it
// cleanly.
func Example() {
	dir, _ := os.MkdirTemp("", "querycmd-example")
	defer os.RemoveAll(dir)
	layout := filepath.Join(dir, "layout.json")
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://127.0.0.1:3100"}}, Current: []string{"q1"}}
	if err := keyspace.Save(layout, l); err != nil {
		panic(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tap := logtap.New(nil) // or logtap.New(os.Stderr) to see the log too
	done := make(chan error, 1)
	go func() {
		done <- querycmd.Main(ctx, []string{"-name", "q1", "-layout", layout, "-dir", filepath.Join(dir, "q1"),
			"-store", "memory", "-listen", "127.0.0.1:0"}, tap)
		tap.Close()
	}()
	addr, err := tap.Addr(ctx, "query")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("health:", resp.Status)

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// health: 200 OK
	// stopped: <nil>
}
