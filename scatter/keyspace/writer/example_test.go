package writer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace/writer"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// An ingest node's Writer sending a put to the one query node of a
// layout, and the query node holding it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	dir, _ := os.MkdirTemp("", "writer-example")
	defer os.RemoveAll(dir)

	// The query node, over a memory store, on a real listener.
	qstore := memory.New()
	srv := httptest.NewUnstartedServer(nil)
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://" + srv.Listener.Addr().String()}}, Current: []string{"q1"},
		Writers: []string{"ingest-1"}}
	q, err := querynode.New(querynode.Config{Name: "q1", Dir: dir + "/q1", Store: qstore, Token: "t"}, l)
	if err != nil {
		panic(err)
	}
	defer q.Close()
	srv.Config.Handler = q.Handler()
	srv.Start()
	defer srv.Close()

	// The ingest node's side: an outbox on disk and the Writer.
	ob, err := outbox.Open(dir + "/outbox")
	if err != nil {
		panic(err)
	}
	defer ob.Close()
	w, err := writer.New(writer.Config{Name: "ingest-1", Records: memory.New(), Outbox: ob, Token: "t"}, l)
	if err != nil {
		panic(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(rctx) }()

	provider, _ := peer.Decode("12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA")
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	v := store.Value{ProviderID: provider, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12}}
	if err := w.Put(ctx, v, mh); err != nil {
		panic(err)
	}
	// Flush: the put is in the outbox, on disk; Run delivers it.
	if err := w.Flush(ctx); err != nil {
		panic(err)
	}
	for w.Status().Owners["q1"].Pending > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	w.Close()

	got, _ := qstore.Get(ctx, mh)
	fmt.Println(len(got), string(got[0].ContextID))
	fmt.Println(q.Status().Writers["ingest-1"].Applied, "batch applied")
	// Output:
	// 1 ctx
	// 1 batch applied
}

// An ingest node opens its Writer over its own directory: the Writer
// keeps its outbox in dir/outbox and closes it on Close. What it did not
// deliver waits there for the next Writer opened on the same directory.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "writer-open-example")
	defer os.RemoveAll(dir)
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://q1.example:3000"}}, Current: []string{"q1"},
		Writers: []string{"ingest-1"}}
	cfg := writer.Config{Name: "ingest-1", Records: memory.New(), Token: "t"}

	w, err := writer.Open(dir, cfg, l)
	if err != nil {
		panic(err)
	}
	provider, _ := peer.Decode("12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA")
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	if err := w.Put(ctx, store.Value{ProviderID: provider, ContextID: []byte("ctx")}, mh); err != nil {
		panic(err)
	}
	// No Run: nothing is delivered. Close seals the put into the outbox
	// and closes it.
	if err := w.Close(); err != nil {
		panic(err)
	}

	w, err = writer.Open(dir, cfg, l)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	fmt.Println(w.Status().Owners["q1"].Pending, "batch waits for q1")
	// Output:
	// 1 batch waits for q1
}
