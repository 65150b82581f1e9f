package querynode_test

import (
	"net/http"
	"testing"
)

// TestBatchBytesEdge: a batch body of exactly MaxBatchBytes is applied;
// under a limit one byte smaller it is 413 and the position stays.
func TestBatchBytesEdge(t *testing.T) {
	b := batch(1, putOp(t, 1, 1, "a", 1, 2, 3))
	body, err := b.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(body))
	for _, tc := range []struct {
		limit int64
		code  int
	}{
		{size, http.StatusOK},
		{size - 1, http.StatusRequestEntityTooLarge},
	} {
		c := cluster(t, "memory", "q1")
		n := c["q1"]
		qn, err := newNode(n, stable(c, nil, "q1"), tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		n.srv.set(qn.Handler())
		code, ans := postBatch(t, n.srv.URL, b)
		if code != tc.code {
			t.Errorf("a batch of %d bytes under a limit of %d: %d %+v, want %d", size, tc.limit, code, ans, tc.code)
		}
		wantApplied := uint64(0)
		if tc.code == http.StatusOK {
			wantApplied = 1
		}
		if a := qn.Status().Writers[b.Writer].Applied; a != wantApplied {
			t.Errorf("limit %d: position %d, want %d", tc.limit, a, wantApplied)
		}
		if err := qn.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
