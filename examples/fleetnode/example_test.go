package fleetnode_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/memory"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/lease"
)

// A node in this process, on the in-memory backend, wins the repos of a
// catalog of three (generated with git), indexes them and answers a
// search for the line only one of them has.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fleetnode-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	repos, err := repogen.Generate(ctx, dir, 3, repogen.Sizes{Min: 2 << 10, Max: 4 << 10}, 1)
	if err != nil {
		fmt.Println(err)
		return
	}

	b := memory.New()
	cfg := fleetnode.DefaultConfig()
	cfg.Name, cfg.Prefix, cfg.WorkDir = "node-a", "example:", dir
	cfg.HandoffWait = 0 // alone: nobody to hand its indexes to
	cfg.Scan = 20 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := fleetnode.New(cfg, b, ln)
	if err != nil {
		ln.Close()
		fmt.Println(err)
		return
	}
	defer n.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	defer func() { stop(); <-done }()

	var catalog []fleetnode.CatalogEntry
	for _, r := range repos {
		files := make([]codeindex.File, len(r.Files))
		for i, f := range r.Files {
			files[i] = codeindex.File(f)
		}
		est := codeindex.Estimate(files)
		catalog = append(catalog, fleetnode.CatalogEntry{Item: lease.Item{ID: r.ID, Commit: r.Commit, Size: est, MinBid: est}, URL: r.URL})
	}
	if err := fleetnode.PutCatalog(ctx, b.Tables(cfg.Prefix), n.Store(), catalog, 1); err != nil {
		fmt.Println(err)
		return
	}

	ready := func() int {
		k := 0
		for _, it := range n.Status().Items {
			if it.Ready {
				k++
			}
		}
		return k
	}
	for i := 0; i < 200 && ready() < len(repos); i++ { // 20 s at most
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println("ready:", ready(), "of", len(repos))

	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	code, res, refusal, err := fleetnode.Search(ctx, hc, n.Addr(), "repo-0001", "marker-0001", 10)
	if err != nil || code != http.StatusOK {
		fmt.Println(code, refusal, err)
		return
	}
	m := res.Matches[0]
	fmt.Printf("%s served by %s: %s:%d: %s\n", res.Repo, res.ServedBy, m.Path, m.Line, m.Text)
	// Output:
	// ready: 3 of 3
	// repo-0001 served by node-a: README.md:2: marker-0001 is the unique line of this repo
}
