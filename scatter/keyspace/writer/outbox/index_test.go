package outbox

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Memory does not grow with the records: a queue of 40000 records keeps
// one index mark per MiB, and a Peek from any Seq finds it through the
// marks, before and after a reopen (which rebuilds them from the files).
func TestIndexMarks(t *testing.T) {
	dir := t.TempDir()
	o, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { o.Close() }()
	const n = 40000
	p := func(seq uint64) []byte { return fmt.Appendf(bytes.Repeat([]byte{'x'}, int(seq%150)), "/%d", seq) }
	for i := uint64(1); i <= n; i++ {
		if _, err := o.Append("d", i, p(i)); err != nil {
			t.Fatal(err)
		}
	}
	check := func() {
		t.Helper()
		q := o.queues["d"]
		q.mu.Lock()
		s := q.segs[0]
		marks, size := len(s.marks), s.size
		q.mu.Unlock()
		if want := int(size/markStride) + 1; marks > want {
			t.Fatalf("%d marks for %d bytes, want at most %d", marks, size, want)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			after := rng.Uint64N(n)
			recs, err := o.Peek("d", after, 3, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs {
				if r.Seq != after+1+uint64(i) || r.Epoch != r.Seq || !bytes.Equal(r.Payload, p(r.Seq)) {
					t.Fatalf("Peek(%d)[%d] = seq %d epoch %d %q", after, i, r.Seq, r.Epoch, r.Payload)
				}
			}
		}
	}
	check()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if o, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	check()
}
