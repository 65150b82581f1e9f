package scattercmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/internal/cmd/scattercmd"
	"github.com/indexkit/indexkit/internal/testbed/deadline"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// lockedBuffer is a bytes.Buffer safe to write from the logger while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// queryNode is a store-backed find API on 127.0.0.1 that counts the
// lookups it serves.
type queryNode struct {
	name  string
	srv   *httptest.Server
	store store.Store
	finds atomic.Int64

	mu   sync.Mutex
	seen map[string]bool // keys asked since the last reset, as B58
}

func (n *queryNode) asked(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seen[key]
}

func (n *queryNode) reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = map[string]bool{}
}

// The front end reads a keyspace-sharded query layer from a -layout file:
// each lookup asks only the read owners of its key on the layout's read
// ring, GET /shard/v1/status reports the layout's epoch, a SIGHUP after
// the file moved to PhaseMoved sends reads to the next ring (the new node
// included), and a bad layout file is refused with the reason logged,
// keeping the layout in force.
func TestLayoutFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	nodes := make([]*queryNode, 4)
	for i := range nodes {
		n := &queryNode{name: fmt.Sprintf("q%d", i), store: memory.New(), seen: map[string]bool{}}
		t.Cleanup(func() { n.store.Close() })
		sb, err := find.NewStoreBackend(n.store)
		if err != nil {
			t.Fatal(err)
		}
		h, err := find.NewHandler(sb)
		if err != nil {
			t.Fatal(err)
		}
		n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.finds.Add(1)
			n.mu.Lock()
			n.seen[strings.TrimPrefix(r.URL.Path, "/multihash/")] = true
			n.mu.Unlock()
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(n.srv.Close)
		nodes[i] = n
	}
	stable := keyspace.Layout{Epoch: 1, Replication: 2, Phase: keyspace.PhaseStable}
	for _, n := range nodes[:3] {
		stable.Nodes = append(stable.Nodes, keyspace.Node{Name: n.name, URL: n.srv.URL})
		stable.Current = append(stable.Current, n.name)
	}
	copying, err := stable.Join(keyspace.Node{Name: nodes[3].name, URL: nodes[3].srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	moved, err := copying.Advance()
	if err != nil {
		t.Fatal(err)
	}
	before, err := keyspace.NewPlacement(stable)
	if err != nil {
		t.Fatal(err)
	}
	after, err := keyspace.NewPlacement(moved)
	if err != nil {
		t.Fatal(err)
	}

	// Place the keys as the query layer would have by PhaseMoved: on
	// their write owners, those of both rings.
	_, pub, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	prov, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	var keys []multihash.Multihash
	for k := range 30 {
		mh, _ := multihash.Sum(fmt.Appendf(nil, "layout key %d", k), multihash.SHA2_256, -1)
		keys = append(keys, mh)
		for _, o := range after.AppendWriteOwners(nil, mh) {
			if err := nodes[o].store.Put(ctx, store.Value{ProviderID: prov, ContextID: []byte("c"), Metadata: []byte("m")}, mh); err != nil {
				t.Fatal(err)
			}
		}
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "layout.json")
	if err := keyspace.Save(path, stable); err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- scattercmd.Main(ctx, []string{"-layout", path, "-listen", "127.0.0.1:0", "-metrics", "", "-log-level", "debug"}, &stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Main: %v", err)
		}
	}()
	addrRE := regexp.MustCompile(`msg=listening name=find addr=(\S+)`)
	var front string
	for deadline := time.Now().Add(10 * time.Second); front == ""; {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			front = "http://" + m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line:\n%s", stderr.String())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}

	status := func() keyspace.Status {
		t.Helper()
		resp, err := http.Get(front + keyspace.PathStatus)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st keyspace.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status: %d, %v", resp.StatusCode, err)
		}
		return st
	}
	// lookups finds every key through the front end and checks that each
	// asked only read owners of p.
	lookups := func(p *keyspace.Placement) {
		t.Helper()
		for _, n := range nodes {
			n.reset()
		}
		for _, mh := range keys {
			resp, err := http.Get(front + "/multihash/" + mh.B58String())
			if err != nil {
				t.Fatal(err)
			}
			var fr find.FindResponse
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = json.Unmarshal(body, &fr)
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s", body)
			}
			if resp.StatusCode != http.StatusOK || err != nil || len(fr.MultihashResults) != 1 ||
				len(fr.MultihashResults[0].ProviderResults) != 1 || resp.Header.Get(find.HeaderBackends) != "" {
				t.Fatalf("epoch %d: key %s: status %d, %v, %+v", p.Epoch(), mh.B58String(), resp.StatusCode, err, fr)
			}
		}
		// The first complete answer cancels the other owner's request,
		// which may then never arrive: each key reached some of its read
		// owners and no other node.
		for _, mh := range keys {
			var asked, want []string
			for _, n := range nodes {
				if n.asked(mh.B58String()) {
					asked = append(asked, n.name)
				}
			}
			for _, o := range p.AppendReadOwners(nil, mh) {
				want = append(want, p.Nodes()[o].Name)
			}
			if len(asked) == 0 || slices.ContainsFunc(asked, func(n string) bool { return !slices.Contains(want, n) }) {
				t.Fatalf("epoch %d: key %s asked %q, want some of its read owners %q", p.Epoch(), mh.B58String(), asked, want)
			}
		}
	}
	reload := func(l *keyspace.Layout, raw string, wantEpoch uint64, wantLog string) {
		t.Helper()
		if l != nil {
			if err := keyspace.Save(path, *l); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		logs := len(regexp.MustCompile(regexp.QuoteMeta(wantLog)).FindAllString(stderr.String(), -1))
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(regexp.QuoteMeta(wantLog))
		for deadline := time.Now().Add(10 * time.Second); len(re.FindAllString(stderr.String(), -1)) == logs; {
			if time.Now().After(deadline) {
				t.Fatalf("no %q after SIGHUP:\n%s", wantLog, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := status(); st.Role != "frontend" || st.Epoch != wantEpoch {
			t.Fatalf("status %+v, want role frontend at epoch %d", st, wantEpoch)
		}
	}

	if st := status(); st.Role != "frontend" || st.Epoch != 1 {
		t.Fatalf("status %+v, want role frontend at epoch 1", st)
	}
	lookups(before)
	if n := nodes[3].finds.Load(); n != 0 {
		t.Fatalf("q3, not yet on the read ring, was asked %d times", n)
	}

	reload(&moved, "", moved.Epoch, "config reloaded")
	lookups(after)
	if nodes[3].finds.Load() == 0 {
		t.Fatal("q3, on the read ring now, was never asked")
	}

	// A layout that does not validate keeps the one in force, and the log
	// says why.
	bad := moved.Clone()
	bad.Replication = 5
	b, _ := json.Marshal(bad)
	reload(nil, string(b), moved.Epoch, "replication 5")
	if !regexp.MustCompile(`reload failed; keeping the current backends.*fewer than replication 5`).MatchString(stderr.String()) {
		t.Errorf("the failed reload's log does not say why:\n%s", stderr.String())
	}
	lookups(after)
}

// -layout names the backends: -backends beside it is refused.
func TestLayoutWithBackends(t *testing.T) {
	err := scattercmd.Main(deadline.Context(t, time.Minute), []string{"-layout", "x.json", "-backends", "http://a"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "give -backends or -layout, not both") {
		t.Errorf("-layout with -backends: %v", err)
	}
}

// With -layout-poll the front end follows the layout file with no
// SIGHUP: the next epoch's read nodes serve once the file holds it, and
// a poll that finds the layout in force logs nothing.
func TestLayoutPoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	backend := func() string {
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		return srv.URL
	}
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: backend()}}, Current: []string{"q1"}}
	path := filepath.Join(t.TempDir(), "layout.json")
	if err := keyspace.Save(path, l); err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- scattercmd.Main(ctx, []string{"-layout", path, "-layout-poll", "5ms", "-listen", "127.0.0.1:0", "-metrics", ""}, &stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Main: %v", err)
		}
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s:\n%s", what, stderr.String())
			}
		}
	}
	addrRE := regexp.MustCompile(`msg=listening name=find addr=(\S+)`)
	wait("listening line", func() bool { return addrRE.MatchString(stderr.String()) })
	front := "http://" + addrRE.FindStringSubmatch(stderr.String())[1]
	epoch := func() uint64 {
		resp, err := http.Get(front + keyspace.PathStatus)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st keyspace.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Epoch
	}
	time.Sleep(50 * time.Millisecond) // ten polls of the layout in force
	if strings.Contains(stderr.String(), "reload") || epoch() != 1 {
		t.Fatalf("epoch %d; polls of an unchanged file logged:\n%s", epoch(), stderr.String())
	}

	q2 := backend()
	next, err := l.Join(keyspace.Node{Name: "q2", URL: q2})
	if err != nil {
		t.Fatal(err)
	}
	if next, err = next.Advance(); err != nil { // moved: reads go to q1 and q2
		t.Fatal(err)
	}
	if err := keyspace.Save(path, next); err != nil {
		t.Fatal(err)
	}
	wait("epoch of the new layout", func() bool { return epoch() == next.Epoch })
	wait("reload log", func() bool {
		return strings.Contains(stderr.String(), `msg="config reloaded"`) && strings.Contains(stderr.String(), q2)
	})
}
