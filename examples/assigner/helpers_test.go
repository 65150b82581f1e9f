package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// binary returns the binary of pkg (an import path of the module):
// proctest.Build links it once for all the tests that ask for it.
func binary(t *testing.T, pkg string) string {
	t.Helper()
	return proctest.Build(t, pkg)
}

const (
	indexerPkg  = "github.com/indexkit/indexkit/examples/indexer"
	assignerPkg = "github.com/indexkit/indexkit/examples/assigner"
)

// startIndexerDir starts an indexer node in assigner mode on dir.
func startIndexerDir(t *testing.T, dir string) *node {
	t.Helper()
	p := proctest.Start(t, binary(t, indexerPkg), "-dir", dir, "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0",
		"-admin", "127.0.0.1:0", "-metrics", "", "-p2p", "none", "-use-assigner", "-allow-private-addrs", "-log-level", "debug")
	p.WaitMsg("starting")
	return &node{Proc: p, find: "http://" + p.Addr("find"), ingest: "http://" + p.Addr("ingest"), admin: "http://" + p.Addr("admin")}
}

// flag is the node's -indexer flag value, with ID id.
func (n *node) flag(id string) string {
	return fmt.Sprintf("id=%s,admin=%s,find=%s,ingest=%s", id, n.admin, n.find, n.ingest)
}

func (n *node) client(t *testing.T) *admin.Client {
	t.Helper()
	c, err := admin.NewClient(n.admin)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// assigned is the node's GET /ingest/assigned, nil on error.
func (n *node) assigned(t *testing.T) []admin.Assignment {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	as, err := n.client(t).Assigned(ctx)
	if err != nil {
		return nil
	}
	return as
}

// holds reports whether the node is assigned p, and with which Continued.
func (n *node) holds(t *testing.T, p peer.ID) (bool, peer.ID) {
	t.Helper()
	for _, a := range n.assigned(t) {
		if a.Publisher == p {
			return true, a.Continued
		}
	}
	return false, ""
}

// pubStatus is publisher p's entry of the node's GET /ingest/status.
func (n *node) pubStatus(t *testing.T, p peer.ID) (admin.PublisherStatus, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := n.client(t).IngestStatus(ctx)
	if err != nil {
		return admin.PublisherStatus{}, false
	}
	for _, s := range st {
		if s.Publisher == p {
			return s, true
		}
	}
	return admin.PublisherStatus{}, false
}

// headOf is the head of the node's last finished walk of p, or cid.Undef.
func (n *node) headOf(t *testing.T, p peer.ID) cid.Cid {
	t.Helper()
	s, _ := n.pubStatus(t, p)
	return s.LastHead
}

func (n *node) freeze(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.client(t).Freeze(ctx); err != nil {
		t.Fatalf("freeze %s: %v", n.admin, err)
	}
}

// testPub is a publisher: a generated chain served over HTTP by an
// ipnisync publisher, which records the CIDs of the blocks fetched.
type testPub struct {
	chain *chaingen.Chain
	pub   *ipnisync.Publisher
	addr  multiaddr.Multiaddr
	id    peer.ID

	mu      sync.Mutex
	fetched []cid.Cid // GET /ipni/v1/ad/{cid}, in order
}

func newPublisher(t *testing.T, seed uint64, ads int) *testPub {
	t.Helper()
	chain, err := chaingen.Generate(chaingen.Config{Seed: seed, Ads: ads, MhsPerAd: 6, ChunkSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(chain.Block))
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), chain.Head()); err != nil {
		t.Fatal(err)
	}
	tp := &testPub{chain: chain, pub: pub, id: chain.Publisher}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s, ok := strings.CutPrefix(r.URL.Path, "/ipni/v1/ad/"); ok && s != "head" {
			if c, err := cid.Decode(s); err == nil {
				tp.mu.Lock()
				tp.fetched = append(tp.fetched, c)
				tp.mu.Unlock()
			}
		}
		pub.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	tp.addr = multiaddr.StringCast("/ip4/" + h + "/tcp/" + port + "/http/p2p/" + chain.Publisher.String())
	return tp
}

// extend appends n ads and moves the served head.
func (p *testPub) extend(t *testing.T, n int) {
	t.Helper()
	if err := p.chain.Extend(n); err != nil {
		t.Fatal(err)
	}
	if err := p.pub.SetHead(context.Background(), p.chain.Head()); err != nil {
		t.Fatal(err)
	}
}

func (p *testPub) head() cid.Cid { return p.chain.Head() }

// fetches returns the CIDs fetched so far, in order.
func (p *testPub) fetches() []cid.Cid {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]cid.Cid(nil), p.fetched...)
}

// announceTo PUTs the publisher's announce of its head to base/announce,
// as a publisher does over HTTP, and returns the status code.
func (p *testPub) announceTo(t *testing.T, base string) int {
	t.Helper()
	body, err := announce.Message{Cid: p.head(), Addrs: []multiaddr.Multiaddr{p.addr}}.EncodeCBOR()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, base+"/announce", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s/announce: %v", base, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// asg is a running assigner.
type asg struct {
	*proctest.Proc
	announce, state, metrics string
}

// startAssigner runs the assigner over the pool given as -indexer flag
// values, polling every 500ms, with extra flags.
func startAssigner(t *testing.T, pool []string, extra ...string) *asg {
	t.Helper()
	args := []string{"-listen", "127.0.0.1:0", "-state-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0",
		"-poll-interval", "500ms", "-request-timeout", "5s", "-log-level", "debug",
		"-allow-private-addrs"} // the test's publishers are on loopback
	for _, ix := range pool {
		args = append(args, "-indexer", ix)
	}
	p := proctest.Start(t, binary(t, assignerPkg), append(args, extra...)...)
	p.WaitMsg("starting")
	return &asg{Proc: p, announce: "http://" + p.Addr("announce"), state: "http://" + p.Addr("state"), metrics: "http://" + p.Addr("metrics")}
}

func (a *asg) stop(t *testing.T) {
	t.Helper()
	if code := a.Stop(); code != 0 {
		t.Fatalf("assigner exited %d\n%s", code, a.Output())
	}
}

// indexers is GET /indexers by ID; empty while the service is not
// running yet (the listeners are up before it: 503).
func (a *asg) indexers(t *testing.T) map[string]assigner.IndexerSnapshot {
	t.Helper()
	var ixs []assigner.IndexerSnapshot
	resp, err := http.Get(a.state + "/indexers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		return nil
	case resp.StatusCode != http.StatusOK:
		t.Fatalf("GET /indexers: %s %s", resp.Status, b)
	}
	if err := json.Unmarshal(b, &ixs); err != nil {
		t.Fatalf("GET /indexers: %v in %s", err, b)
	}
	out := make(map[string]assigner.IndexerSnapshot, len(ixs))
	for _, ix := range ixs {
		out[ix.ID] = ix
	}
	return out
}

// waitKnown waits for the startup rebuild: every indexer of ids polled.
func (a *asg) waitKnown(t *testing.T, ids ...string) {
	t.Helper()
	waitFor(t, "the startup rebuild", func() bool {
		ixs := a.indexers(t)
		for _, id := range ids {
			if !ixs[id].Known || !ixs[id].Online {
				return false
			}
		}
		return true
	})
}

// publisher is p's entry of GET /assignments, if any.
func (a *asg) publisher(t *testing.T, p peer.ID) (assigner.PublisherSnapshot, assigner.Assignments) {
	t.Helper()
	var as assigner.Assignments
	getJSON(t, a.state+"/assignments", &as)
	for _, ps := range as.Publishers {
		if ps.Publisher == p {
			return ps, as
		}
	}
	return assigner.PublisherSnapshot{}, as
}

// metric is the sum of the samples of the metric name whose labels
// include every one of labels (`kind="assign"`); 0 when there are none.
func (a *asg) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(a.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		series := line[:i]
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(series, l)
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// waitPolls waits for n more successful polls of each of ids after
// those counted now, so that what the test asserts next has been through
// full poll cycles.
func (a *asg) waitPolls(t *testing.T, n int, ids ...string) {
	t.Helper()
	base := map[string]float64{}
	for _, id := range ids {
		base[id] = a.metric(t, "indexkit_assigner_polls_total", `indexer="`+id+`"`, `result="ok"`)
	}
	waitFor(t, fmt.Sprintf("%d polls of %v", n, ids), func() bool {
		for _, id := range ids {
			if a.metric(t, "indexkit_assigner_polls_total", `indexer="`+id+`"`, `result="ok"`) < base[id]+float64(n) {
				return false
			}
		}
		return true
	})
}

// indexersOf lists the indexers holding p in a snapshot, with their
// Continued.
func indexersOf(ps assigner.PublisherSnapshot) map[string]peer.ID {
	out := map[string]peer.ID{}
	for _, a := range ps.Assignments {
		out[a.Indexer] = a.Continued
	}
	return out
}

// gate is a TCP listener of the test standing for an address of a node
// that is not running yet: until open, it accepts connections and closes
// them at once, so requests to it fail as to an unreachable node; once
// open, it relays connections to the node's real address.
type gate struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	wg     sync.WaitGroup
	conns  map[net.Conn]bool
}

func newGate(t *testing.T) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, conns: map[net.Conn]bool{}}
	g.wg.Add(1)
	go g.serve()
	t.Cleanup(g.close)
	return g
}

func (g *gate) url() string { return "http://" + g.ln.Addr().String() }

// open relays from now on to target (host:port or a URL).
func (g *gate) open(target string) {
	g.mu.Lock()
	g.target = strings.TrimPrefix(target, "http://")
	g.mu.Unlock()
}

func (g *gate) serve() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		target := g.target
		g.mu.Unlock()
		if target == "" {
			c.Close()
			continue
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.relay(c, target)
		}()
	}
}

func (g *gate) relay(c net.Conn, target string) {
	defer c.Close()
	b, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer b.Close()
	g.mu.Lock()
	g.conns[c], g.conns[b] = true, true
	g.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, c); b.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, b); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

func (g *gate) close() {
	g.ln.Close()
	g.mu.Lock()
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// holdProxy is a reverse proxy of the test in front of a node's admin API
// that counts the handoff requests (POST /ingest/handoff/{id}) and holds
// each until the test decides: deliver it to the node (on a context of its
// own, so it reaches the node even if the assigner that sent it is gone),
// or drop it. Every other request goes through.
type holdProxy struct {
	srv     *httptest.Server
	target  *url.URL
	arrived chan string   // the path of each handoff request, as it arrives
	decide  chan bool     // true: deliver the held request; false: drop it
	result  chan int      // the node's status for each delivered one
	closing chan struct{} // closed at cleanup: release anything held
	mu      sync.Mutex
	count   int
}

func newHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	hp := &holdProxy{target: u, arrived: make(chan string, 16), decide: make(chan bool), result: make(chan int, 16), closing: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	hp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/ingest/handoff/") {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		hp.mu.Lock()
		hp.count++
		hp.mu.Unlock()
		hp.arrived <- r.URL.Path
		var deliver bool
		select {
		case deliver = <-hp.decide:
		case <-hp.closing:
			http.Error(w, "test over", http.StatusServiceUnavailable)
			return
		}
		if !deliver {
			http.Error(w, "dropped by the test", http.StatusBadGateway)
			return
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, u.String()+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			hp.result <- 0
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		hp.result <- resp.StatusCode
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(hp.srv.Close)
	t.Cleanup(func() { close(hp.closing) }) // runs before srv.Close
	return hp
}

func (hp *holdProxy) handoffs() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return hp.count
}

// waitArrival waits for the next handoff request and returns its path.
func (hp *holdProxy) waitArrival(t *testing.T) string {
	t.Helper()
	select {
	case p := <-hp.arrived:
		return p
	case <-time.After(waitTimeout):
		t.Fatalf("no handoff request within %s", waitTimeout)
		return ""
	}
}

// release delivers (or drops) the held request; for a delivered one it
// returns the node's status.
func (hp *holdProxy) release(t *testing.T, deliver bool) int {
	t.Helper()
	select {
	case hp.decide <- deliver:
	case <-time.After(waitTimeout):
		t.Fatal("no handoff request held")
	}
	if !deliver {
		return 0
	}
	select {
	case code := <-hp.result:
		return code
	case <-time.After(waitTimeout):
		t.Fatal("the delivered handoff got no answer")
		return 0
	}
}
