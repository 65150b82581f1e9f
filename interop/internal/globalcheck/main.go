// Command globalcheck imports every role package of indexkit's examples
// and runs an indexer node with a libp2p host, then reports anything the
// role packages registered in process-wide state: a handler on
// http.DefaultServeMux, a collector on Prometheus's default registry, an
// expvar, a flag on flag.CommandLine. A role package is a library: an
// embedding program owns those. It prints one line per finding and exits
// 1 if there is any (2 if the node cannot run), 0 otherwise.
package main

import (
	"context"
	"expvar"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	_ "github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/examples/indexernode"
	_ "github.com/indexkit/indexkit/examples/localpool"
	_ "github.com/indexkit/indexkit/examples/piecenode"
	_ "github.com/indexkit/indexkit/examples/publishernode"
	_ "github.com/indexkit/indexkit/examples/querynode"
	_ "github.com/indexkit/indexkit/examples/scatternode"
)

func main() {
	if err := runIndexer(); err != nil {
		fmt.Fprintln(os.Stderr, "globalcheck: running an indexer node:", err)
		os.Exit(2)
	}
	findings := check()
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		os.Exit(1)
	}
	fmt.Println("no process-wide registration")
}

// runIndexer runs an indexer node with a libp2p host on loopback for a
// moment, so that whatever it registers when it starts is seen too.
func runIndexer() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "globalcheck")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := indexernode.DefaultConfig()
	cfg.Dir = dir
	cfg.Store = "memory"
	cfg.P2P = "/ip4/127.0.0.1/tcp/0"
	var lns indexernode.Listeners
	for _, ln := range []*net.Listener{&lns.Find, &lns.Ingest, &lns.Admin} {
		if *ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
	}
	node, err := indexernode.New(ctx, cfg, lns)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- node.Run(runCtx) }()
	resp, err := http.Get(node.Addrs().FindURL() + "/health")
	if err == nil {
		resp.Body.Close()
	}
	stop()
	runErr := <-done
	if cerr := node.Close(); runErr == nil {
		runErr = cerr
	}
	return runErr
}

// check lists what is registered in process-wide state.
func check() []string {
	var out []string
	// The default mux has no listing: probe the paths a library would take.
	// expvar's own /debug/vars is not probed: the standard library
	// registers it when expvar is imported, and Prometheus's client (which
	// go-libp2p imports) imports it.
	for _, p := range []string{"/", "/debug/pprof/", "/debug/pprof/profile", "/metrics", "/debug/requests", "/debug/events", "/health"} {
		if _, pattern := http.DefaultServeMux.Handler(httptest.NewRequest(http.MethodGet, p, nil)); pattern != "" {
			out = append(out, fmt.Sprintf("http.DefaultServeMux: a handler for %q (pattern %q)", p, pattern))
		}
	}
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		out = append(out, "prometheus.DefaultGatherer: "+err.Error())
	}
	for _, f := range families {
		// The Go and process collectors are registered by client_golang itself.
		if name := f.GetName(); !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			out = append(out, "prometheus default registry: "+name)
		}
	}
	expvar.Do(func(kv expvar.KeyValue) {
		if kv.Key != "cmdline" && kv.Key != "memstats" { // expvar's own
			out = append(out, "expvar: "+kv.Key)
		}
	})
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		out = append(out, "flag.CommandLine: -"+f.Name)
	})
	return out
}
