package querynode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// A query node applies one batch from an ingest node and reports its
// status.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	dir, _ := os.MkdirTemp("", "querynode-example")
	defer os.RemoveAll(dir)
	st := memory.New()
	defer st.Close()

	srv := httptest.NewServer(nil)
	defer srv.Close()
	layout := keyspace.Layout{
		Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes:   []keyspace.Node{{Name: "q1", URL: srv.URL}},
		Current: []string{"q1"},
		Writers: []string{"ingest-1"},
	}
	n, err := querynode.New(querynode.Config{Name: "q1", Dir: dir, Store: st, Token: "t0ken"}, layout)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()
	srv.Config.Handler = n.Handler()

	// What an ingest node sends: one Put, numbered 1, with nothing after
	// it in its outbox.
	mh, _ := multihash.Sum([]byte("content"), multihash.SHA2_256, -1)
	prov, _ := peer.Decode("12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA")
	b := keyspace.Batch{Writer: "ingest-1", Stream: 42, Epoch: 1, Seq: 1, Drained: true, Ops: []keyspace.Op{{
		Kind:        keyspace.OpPut,
		Value:       store.Value{ProviderID: prov, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12}},
		Multihashes: []multihash.Multihash{mh},
	}}}
	body, _ := b.AppendBinary(nil)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+keyspace.PathBatch, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer t0ken")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	var ans keyspace.BatchAnswer
	json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	fmt.Println("batch:", resp.StatusCode, "applied", ans.Applied)

	vs, _ := st.Get(ctx, mh)
	fmt.Println("values of the key:", len(vs))

	resp, err = http.Get(srv.URL + keyspace.PathStatus)
	if err != nil {
		fmt.Println(err)
		return
	}
	var s keyspace.Status
	json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	fmt.Printf("status: role %s, epoch %d, ready %v, ingest-1 at %d\n", s.Role, s.Epoch, s.Ready, s.Writers["ingest-1"].Applied)
	// Output:
	// batch: 200 applied 1
	// values of the key: 1
	// status: role query, epoch 1, ready true, ingest-1 at 1
}
