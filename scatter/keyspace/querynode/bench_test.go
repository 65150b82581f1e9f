package querynode_test

import (
	"context"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

const benchKeys = 1000

func benchOps(b *testing.B, round int) []keyspace.Op {
	op := keyspace.Op{Kind: keyspace.OpPut, Value: store.Value{ProviderID: provider(b, 1), ContextID: []byte{1}, Metadata: []byte("m")}}
	for i := range benchKeys {
		op.Multihashes = append(op.Multihashes, mhOf(b, round*benchKeys+i))
	}
	return []keyspace.Op{op}
}

// BenchmarkBatch posts batches of 1000 multihashes to a node over HTTP on
// 127.0.0.1 (apply, flush, durable position). The baseline applies the
// same ops to the same kind of store directly, with a Flush.
func BenchmarkBatch(b *testing.B) {
	for _, kind := range []string{"memory", "pebble"} {
		b.Run(kind+"/node", func(b *testing.B) {
			c := cluster(b, kind, "q1")
			startNode(b, c["q1"], keyspace.Layout{Epoch: 1, Replication: 1, Nodes: nodesOf(c, "q1"), Current: []string{"q1"}, Phase: keyspace.PhaseStable})
			var seq uint64
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ops := benchOps(b, i)
				seq++
				mustPost(b, c["q1"].srv.URL, keyspace.Batch{Writer: "w1", Stream: 1, Epoch: 1, Seq: seq, Ops: ops})
			}
			b.ReportMetric(float64(b.N*benchKeys)/b.Elapsed().Seconds(), "keys/s")
		})
		b.Run(kind+"/direct", func(b *testing.B) {
			st := backend(b, kind)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				for _, op := range benchOps(b, i) {
					if err := st.Put(ctx, op.Value, op.Multihashes...); err != nil {
						b.Fatal(err)
					}
				}
				if err := st.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*benchKeys)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}
