package querynode_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Writers apply concurrently, each in order, and the same batch posted
// twice at once is applied once.
func TestConcurrentWriters(t *testing.T) {
	n, _ := one(t, "pebble")
	const writers, batches = 3, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := 1; s <= batches; s++ {
				b := keyspace.Batch{Writer: fmt.Sprintf("w%d", w), Stream: 1, Epoch: 1, Seq: uint64(s), Ops: []keyspace.Op{putOp(t, w+1, 1, "m", w*1000+s)}}
				if s%2 == 0 {
					b.Ops = append(b.Ops, removeOp(t, w+1, 1, w*1000+s-1))
				}
				body, _ := b.AppendBinary(nil)
				// Twice at once: a retry racing the first attempt.
				var inner sync.WaitGroup
				codes := make([]int, 2)
				for i := range 2 {
					inner.Add(1)
					go func() {
						defer inner.Done()
						req, _ := http.NewRequest(http.MethodPost, n.srv.URL+keyspace.PathBatch, bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+token)
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						resp.Body.Close()
						codes[i] = resp.StatusCode
					}()
				}
				inner.Wait()
				if codes[0] != http.StatusOK || codes[1] != http.StatusOK {
					t.Errorf("writer %d batch %d: %v", w, s, codes)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := n.Status()
	for w := range writers {
		if p := st.Writers[fmt.Sprintf("w%d", w)]; p.Applied != batches {
			t.Fatalf("writer %d at %+v", w, p)
		}
		for s := 1; s <= batches; s++ {
			want := 1
			if s%2 == 1 {
				want = 0
			}
			if g := got(t, n.st, mhOf(t, w*1000+s)); len(g) != want {
				t.Fatalf("writer %d key %d: %v", w, s, g)
			}
		}
	}
}
