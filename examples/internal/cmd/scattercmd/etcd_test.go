package scattercmd_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/scattercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
)

// A front end on an etcd layout follows its watch (epoch 2 published, its
// status key and /shard/v1/status show 2 with no SIGHUP) and keeps its
// status under a lease named by its listen address. Its etcd endpoint
// paused, it marks every answer partial within the lease's TTL (a key not
// found is 502, not 404; one found is marked incomplete), while the
// coordinator publishes epoch 3 without it; resumed, it answers complete
// again only once it runs epoch 3. Stopped, its key is gone at once.
func TestEtcdLayoutFence(t *testing.T) {
	const ttl = time.Second
	c := etcdtest.Start(t, etcdtest.WithProxies())
	m := c.Members[0]
	// The test's own client bypasses the proxy the front end goes through.
	cli := etcdtest.Client(t, "http://"+m.DirectClientAddr())
	prefix := etcdtest.Prefix(t, cli, "front")
	j, err := etcdjson.New([]string{"http://" + m.DirectClientAddr()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	st := etcdlayout.New(j, prefix)
	defer st.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	mem := memory.New()
	defer mem.Close()
	v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("c"), Metadata: []byte("m")}
	have := storetest.Multihashes("p", 1)[0]
	missing := storetest.Multihashes("nobody", 1)[0]
	if err := mem.Put(ctx, v, have); err != nil {
		t.Fatal(err)
	}
	sb, err := find.NewStoreBackend(mem)
	if err != nil {
		t.Fatal(err)
	}
	h, err := find.NewHandler(sb)
	if err != nil {
		t.Fatal(err)
	}
	q := httptest.NewServer(h)
	defer q.Close()
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q0", URL: q.URL}}, Current: []string{"q0"}}
	rev, err := st.Publish(ctx, 0, l)
	if err != nil {
		t.Fatal(err)
	}

	tap := logtap.New(nil)
	done := make(chan error, 1)
	url := "etcd://" + strings.TrimPrefix(m.ClientAddr(), "http://") + "/" + prefix
	go func() {
		done <- scattercmd.Main(ctx, []string{"-listen", "127.0.0.1:0", "-metrics", "", "-layout", url,
			"-presence-ttl", ttl.String(), "-log-level", "debug"}, tap)
		tap.Close()
	}()
	addr, err := tap.Addr(ctx, "find")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("front end log:\n%s", strings.Join(tap.Lines(), "\n"))
		}
	}()
	base := "http://" + addr
	get := func(mh string) (int, string) {
		resp, err := http.Get(base + "/multihash/" + mh)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get(find.HeaderBackends)
	}
	frontEpoch := func() uint64 {
		resp, err := http.Get(base + keyspace.PathStatus)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s keyspace.Status
		json.NewDecoder(resp.Body).Decode(&s)
		return s.Epoch
	}
	waitKey := func(want uint64) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			sts, err := st.Statuses(ctx)
			if err == nil && len(sts) == 1 && sts[0].Role == keyspace.RoleFront && sts[0].Name == addr && sts[0].Epoch == want {
				return time.Since(start)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("5 s on, Statuses = %+v, %v; want the front end %s at epoch %d", sts, err, addr, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitKey(1)
	if code, _ := get(have.B58String()); code != http.StatusOK {
		t.Fatalf("a key that is there: %d", code)
	}
	if code, _ := get(missing.B58String()); code != http.StatusNotFound {
		t.Fatalf("a key that is not there: %d, want 404", code)
	}

	l.Epoch = 2
	if rev, err = st.Publish(ctx, rev, l); err != nil {
		t.Fatal(err)
	}
	took := waitKey(2)
	if e := frontEpoch(); e != 2 {
		t.Fatalf("/shard/v1/status epoch %d, its key says 2", e)
	}
	t.Logf("publish of epoch 2 to the front end's key showing it: %v", took.Round(time.Millisecond))

	m.ClientProxy().Pause()
	paused := time.Now()
	l.Epoch = 3
	if _, err = st.Publish(ctx, rev, l); err != nil {
		t.Fatal(err)
	}
	for {
		code, _ := get(missing.B58String())
		if code == http.StatusBadGateway {
			break
		}
		if code != http.StatusNotFound {
			t.Fatalf("cut off: a key that is not there: %d, want 404 then 502", code)
		}
		if time.Since(paused) > ttl+time.Second {
			t.Fatalf("cut off from etcd for %v (TTL %v), a key that is not there still answers 404", time.Since(paused).Round(time.Millisecond), ttl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fencedAfter := time.Since(paused)
	if fencedAfter > ttl+100*time.Millisecond {
		t.Errorf("answers turned partial %v after the cut, later than the TTL %v: the key may have expired before", fencedAfter, ttl)
	}
	if code, backends := get(have.B58String()); code != http.StatusOK || backends == "" {
		t.Errorf("fenced: a key that is there: %d, %s %q; want 200 marked incomplete", code, find.HeaderBackends, backends)
	}

	m.ClientProxy().Resume()
	resumed := time.Now()
	for {
		code, _ := get(missing.B58String())
		if code == http.StatusNotFound {
			break
		}
		if time.Since(resumed) > 10*time.Second {
			t.Fatalf("10 s after etcd answers again, a key that is not there still answers %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e := frontEpoch(); e != 3 {
		t.Errorf("answering complete again at epoch %d; the layout in force is 3", e)
	}
	if code, backends := get(have.B58String()); code != http.StatusOK || backends != "" {
		t.Errorf("back: a key that is there: %d, %s %q; want a complete 200", code, find.HeaderBackends, backends)
	}
	t.Logf("partial %v after the cut (TTL %v); complete again %v after etcd answered, at epoch 3",
		fencedAfter.Round(time.Millisecond), ttl, time.Since(resumed).Round(time.Millisecond))

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Main: %v", err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if sts, err := st.Statuses(sctx); err != nil || len(sts) != 0 {
		t.Fatalf("after Main returned, Statuses = %+v, %v; want none (the lease revoked)", sts, err)
	}
}
