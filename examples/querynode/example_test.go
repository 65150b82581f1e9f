package querynode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// A query node on its own: the layout file names it, no writer is listed,
// so it is ready at once; its status says so, and a find it cannot answer
// is a 404.
func Example() {
	dir, _ := os.MkdirTemp("", "querynode-example")
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	layout := filepath.Join(dir, "layout.json")
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://" + ln.Addr().String()}}, Current: []string{"q1"}}
	if err := keyspace.Save(layout, l); err != nil {
		panic(err)
	}

	cfg := querynode.DefaultConfig()
	cfg.Dir, cfg.Name, cfg.Layout = filepath.Join(dir, "q1"), "q1", layout
	n, err := querynode.New(cfg, ln)
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()

	resp, err := http.Get(n.URL() + keyspace.PathStatus)
	if err != nil {
		panic(err)
	}
	var st keyspace.Status
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	fmt.Println(st.Role, st.Name, "epoch", st.Epoch, "ready", st.Ready)

	resp, err = http.Get(n.URL() + "/multihash/QmNLei78zWmzUdbeRB3CiUfAizWUrbeeZh5K1rhAQKCh51")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("find:", resp.StatusCode)

	stop()
	fmt.Println("run:", <-done)
	fmt.Println("close:", n.Close())
	// Output:
	// query q1 epoch 1 ready true
	// find: 404
	// run: <nil>
	// close: <nil>
}
