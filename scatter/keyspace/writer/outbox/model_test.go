package outbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
)

// modelQueue is the reference a queue is checked against: every record
// in memory, and the bounds of what a crash may leave of the acks.
type modelQueue struct {
	recs    []outbox.Record // recs[i].Seq == i+1
	acked   uint64
	durable uint64 // an ack at least this far is written
	stream  uint64 // 0 until first seen
}

// Random operations on a few queues with tiny segments — Append, Ack,
// Peek, Sync, Remove, Close and reopen, a crash (files dropped as a
// SIGKILL drops them) and reopen — checked after each against a model
// that keeps every record in memory: Peek's records, Status, Dests.
func TestModel(t *testing.T) {
	for run := range 3 {
		t.Run(fmt.Sprint(run), func(t *testing.T) { modelRun(t, uint64(run)) })
	}
}

func modelRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	dir := t.TempDir()
	opts := []outbox.Option{outbox.WithSegmentSize(1500)}
	o, err := outbox.Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { o.Close() }()
	dests := []string{"x", "y", "z"}
	model := map[string]*modelQueue{}
	streamOf := map[string]uint64{} // the last stream of each dest
	reopen := func(crash bool) {
		if crash {
			o.Crash()
		} else if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		if o, err = outbox.Open(dir, opts...); err != nil {
			t.Fatalf("reopen (crash %v): %v", crash, err)
		}
		for d, m := range model {
			st := o.Status(d)
			if st.Acked < m.durable || st.Acked > m.acked {
				t.Fatalf("%s after reopen (crash %v): acked %d, want %d to %d", d, crash, st.Acked, m.durable, m.acked)
			}
			m.acked, m.durable = st.Acked, st.Acked
		}
	}
	for step := range 2000 {
		d := dests[rng.IntN(len(dests))]
		m := model[d]
		var op string
		switch r := rng.IntN(100); {
		case r < 45:
			op = "append"
			if m == nil {
				m = &modelQueue{}
				model[d] = m
			}
			seq := uint64(len(m.recs) + 1)
			rec := outbox.Record{Seq: seq, Epoch: seq % 5, Payload: payload(d, seq, rng.IntN(250))}
			got, err := o.Append(d, rec.Epoch, rec.Payload)
			if err != nil || got != seq {
				t.Fatalf("step %d: Append(%s) = %d, %v; want %d", step, d, got, err, seq)
			}
			m.recs = append(m.recs, rec)
		case r < 65:
			op = "ack"
			head := uint64(0)
			if m != nil {
				head = uint64(len(m.recs))
			}
			through := rng.Uint64N(head + 2)
			err := o.Ack(d, through)
			if through > head {
				if !errors.Is(err, outbox.ErrAckAhead) {
					t.Fatalf("step %d: Ack(%s, %d) past head %d: %v", step, d, through, head, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("step %d: Ack(%s, %d): %v", step, d, through, err)
			}
			if m != nil {
				m.acked = max(m.acked, through)
			}
		case r < 85:
			op = "peek"
			if m == nil {
				break
			}
			after := rng.Uint64N(uint64(len(m.recs)) + 1)
			n, size := 1+rng.IntN(8), rng.IntN(1000)
			got, err := o.Peek(d, after, n, size)
			if err != nil {
				t.Fatalf("step %d: Peek(%s, %d): %v", step, d, after, err)
			}
			var want []outbox.Record
			total := 0
			for _, r := range m.recs[max(after, m.acked):] {
				if len(want) == n || (len(want) > 0 && total+len(r.Payload) > size) {
					break
				}
				want = append(want, r)
				total += len(r.Payload)
			}
			if !slices.EqualFunc(got, want, func(a, b outbox.Record) bool {
				return a.Seq == b.Seq && a.Epoch == b.Epoch && bytes.Equal(a.Payload, b.Payload) && a.Stream == m.stream
			}) {
				t.Fatalf("step %d: Peek(%s, %d, %d, %d) = %v, want %v", step, d, after, n, size, seqs(got), seqs(want))
			}
		case r < 90:
			op = "sync"
			if err := o.Sync(); err != nil {
				t.Fatal(err)
			}
			for _, m := range model {
				m.durable = m.acked
			}
		case r < 93:
			op = "remove"
			if err := o.Remove(d); err != nil {
				t.Fatalf("step %d: Remove(%s): %v", step, d, err)
			}
			// Gone, stream and all: the next Append starts a new
			// stream from Seq 1.
			delete(model, d)
		case r < 97:
			op = "reopen"
			reopen(false)
		default:
			op = "crash"
			reopen(true)
		}
		// Status and Dests against the model.
		var wantDests []string
		for _, d := range dests {
			m := model[d]
			if m == nil {
				if st := o.Status(d); st != (outbox.Status{}) {
					t.Fatalf("step %d (%s): Status(%s) = %+v for no queue", step, op, d, st)
				}
				continue
			}
			wantDests = append(wantDests, d)
			st := o.Status(d)
			if m.stream == 0 {
				if st.Stream == 0 || st.Stream == streamOf[d] {
					t.Fatalf("step %d (%s): %s has stream %x, want a new one (the last was %x)", step, op, d, st.Stream, streamOf[d])
				}
				m.stream, streamOf[d] = st.Stream, st.Stream
			}
			want := outbox.Status{Stream: m.stream, Head: uint64(len(m.recs)), Acked: m.acked}
			for _, r := range m.recs[m.acked:] {
				want.Pending++
				want.Bytes += int64(28 + len(r.Payload))
			}
			if want.Pending > 0 {
				want.OldestEpoch = m.recs[m.acked].Epoch
			}
			if st != want {
				t.Fatalf("step %d (%s): Status(%s) = %+v, want %+v", step, op, d, st, want)
			}
		}
		if got := o.Dests(); !slices.Equal(got, wantDests) {
			t.Fatalf("step %d (%s): Dests = %q, want %q", step, op, got, wantDests)
		}
	}
}
