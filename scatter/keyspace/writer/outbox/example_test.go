package outbox_test

import (
	"fmt"
	"log"
	"os"

	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
)

// An ingest node appends batches for a query node, makes them durable
// with Sync (its checkpoint), and a delivery loop peeks, sends and acks.
func Example() {
	dir, err := os.MkdirTemp("", "outbox-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	o, err := outbox.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer o.Close()

	for _, batch := range []string{"put k1", "put k2", "remove k1"} {
		seq, err := o.Append("query-1", 7, []byte(batch))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("appended", seq)
	}
	if err := o.Sync(); err != nil { // the checkpoint may advance now
		log.Fatal(err)
	}

	// The delivery loop: the records after the last ack, two at a time.
	recs, err := o.Peek("query-1", o.Status("query-1").Acked, 2, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		fmt.Printf("send seq %d epoch %d: %s\n", r.Seq, r.Epoch, r.Payload)
	}
	// The receiver said 200: acknowledge in the stream the records were
	// sent under (a queue removed and created again meanwhile is a new
	// stream, which this does not touch).
	last := recs[len(recs)-1]
	if err := o.AckStream("query-1", last.Stream, last.Seq); err != nil {
		log.Fatal(err)
	}
	st := o.Status("query-1")
	fmt.Printf("pending %d (%d bytes), head %d, acked %d, oldest epoch %d\n", st.Pending, st.Bytes, st.Head, st.Acked, st.OldestEpoch)
	// Output:
	// appended 1
	// appended 2
	// appended 3
	// send seq 1 epoch 7: put k1
	// send seq 2 epoch 7: put k2
	// pending 1 (37 bytes), head 3, acked 2, oldest epoch 7
}
