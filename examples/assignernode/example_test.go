package assignernode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
)

// An assigner in process over a pool of one indexer (here a stub whose
// admin API has nothing assigned), read through its state API.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent) // GET /ingest/assigned: none
	}))
	defer indexer.Close()

	announceLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	stateLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	cfg := assignernode.DefaultConfig()
	cfg.Service.Indexers = []assigner.ServiceIndexer{{ID: "indexer-0",
		AdminURL: indexer.URL + "/admin", FindURL: indexer.URL + "/find", IngestURL: indexer.URL + "/ingest"}}
	a, err := assignernode.New(ctx, cfg, assignernode.Listeners{Announce: announceLn, State: stateLn})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	// The state API answers 503 until Run has started the service.
	var got assigner.Assignments
	for {
		resp, err := http.Get(a.Addrs().StateURL() + "/assignments")
		if err != nil {
			panic(err)
		}
		if resp.StatusCode == http.StatusOK {
			err = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			if err != nil {
				panic(err)
			}
			break
		}
		resp.Body.Close()
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("replication:", got.Replication, "publishers:", len(got.Publishers))

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// replication: 1 publishers: 0
	// stopped: <nil>
}
