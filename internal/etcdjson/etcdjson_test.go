package etcdjson

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a/": "a0", "ab": "ac", "a\xff": "b", "\xff\xff": "\x00"} {
		if got := prefixEnd(in); got != want {
			t.Errorf("prefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestInt64AsString: etcd's gateway writes int64 fields as strings and
// reads them so; a number is taken too.
func TestInt64AsString(t *testing.T) {
	var v struct {
		A, B, C i64
	}
	if err := json.Unmarshal([]byte(`{"A":"9007199254740993","B":7}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != 9007199254740993 || v.B != 7 || v.C != 0 {
		t.Fatalf("decoded %+v", v)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"A":"9007199254740993","B":"7","C":"0"}` {
		t.Fatalf("encoded %s", b)
	}
	if err := json.Unmarshal([]byte(`{"A":"x"}`), &v); err == nil {
		t.Fatal("a non-number decoded without an error")
	}
}

// A member that answers "leader changed" while the cluster elects is asked
// again until it answers; the real case (a SIGKILLed leader under a
// coordinator) is examples/internal/cmd/coordcmd's
// TestEtcdLeaderKilledMidJoin. A cluster that answers nothing at all
// fails at once.
func TestCallWaitsOutAnElection(t *testing.T) {
	var calls atomic.Int32
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"etcdserver: leader changed","code":14,"message":"etcdserver: leader changed"}`)
			return
		}
		fmt.Fprint(w, `{"header":{"revision":"7"},"kvs":[]}`)
	}))
	defer member.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // its port refuses connections now

	c, err := New([]string{dead.URL, member.URL}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kv, rev, err := c.Get(context.Background(), "k")
	if err != nil || kv != nil || rev != 7 {
		t.Fatalf("Get during an election: %v, %d, %v; want no key at revision 7", kv, rev, err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("member asked %d times, want 4", n)
	}

	c, err = New([]string{dead.URL}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, err := c.Get(context.Background(), "k"); err == nil {
		t.Fatal("Get from a cluster that answers nothing: no error")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Get from a cluster that answers nothing took %v, want it to fail at once", d)
	}
}
