package assigner_test

// Fake publishers, indexer nodes and indexers that the Service tests run against.

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

func newPeerID(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// privatePool is the dial policy of a pool on this machine: the test
// publishers listen on 127.0.0.1, which the default policy refuses.
var privatePool = func() *netpolicy.Policy {
	p, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		panic(err)
	}
	return p
}()

// pubAddrs maps the publishers newPublisher serves to their HTTP
// multiaddr, which running.announce names.
var pubAddrs sync.Map

// deadAddr is the address announced for a publisher newPublisher does
// not serve: nothing listens there.
var deadAddr = multiaddr.StringCast("/ip4/127.0.0.1/tcp/9/http")

// newPublisher serves, on 127.0.0.1, an ipnisync publisher whose head is
// signed by a new key, and returns the key's peer ID.
func newPublisher(t *testing.T) peer.ID {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pubAddrs.Store(id, serveHead(t, key, randCid(t)))
	return id
}

// serveHead serves, on 127.0.0.1, an ipnisync publisher whose head head
// is signed by key (no head if head is cid.Undef), and returns its HTTP
// multiaddr.
func serveHead(t *testing.T, key crypto.PrivKey, head cid.Cid) multiaddr.Multiaddr {
	t.Helper()
	return serve(t, headPublisher(t, key, head))
}

// headPublisher is an ipnisync publisher whose head head is signed by key
// and that has no block.
func headPublisher(t *testing.T, key crypto.PrivKey, head cid.Cid) http.Handler {
	t.Helper()
	pub, err := ipnisync.NewPublisher(key, ipnisync.BlockSourceFunc(func(context.Context, cid.Cid) ([]byte, error) {
		return nil, ipnisync.ErrNotFound
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), head); err != nil {
		t.Fatal(err)
	}
	return pub
}

// serve serves h on 127.0.0.1 until the test ends and returns its HTTP
// multiaddr.
func serve(t *testing.T, h http.Handler) multiaddr.Multiaddr {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return httpMaddr(t, srv)
}

func httpMaddr(t *testing.T, srv *httptest.Server) multiaddr.Multiaddr {
	t.Helper()
	a, err := multiaddr.NewMultiaddr(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", srv.Listener.Addr().(*net.TCPAddr).Port))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func randCid(t *testing.T) cid.Cid {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	mh, err := multihash.Sum(b, multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.DagJSON, mh)
}

// fakeNode is an indexer's admin side, in memory.
type fakeNode struct {
	mu          sync.Mutex
	id          peer.ID
	frozen      bool
	down        bool // answer every request 503
	polls       int  // GET /ingest/assigned requests (each poll's first), down or not
	assigned    map[peer.ID]peer.ID
	preferred   []peer.ID
	hangAssign  bool
	assignGate  chan struct{} // when not nil, an assign waits for it to close
	hangHandoff bool
	assigns     []peer.ID
	handoffs    []admin.HandoffRequest
	handoffPubs []peer.ID
}

func (n *fakeNode) Assign(ctx context.Context, p peer.ID) error {
	n.mu.Lock()
	n.assigns = append(n.assigns, p)
	hang, gate := n.hangAssign, n.assignGate
	n.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.frozen:
		return admin.ErrFrozen
	case hasKey(n.assigned, p):
		return admin.ErrAlreadyAssigned
	}
	n.assigned[p] = ""
	return nil
}

func hasKey(m map[peer.ID]peer.ID, p peer.ID) bool { _, ok := m[p]; return ok }

func (n *fakeNode) Unassign(ctx context.Context, p peer.ID) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !hasKey(n.assigned, p) {
		return admin.ErrNotAssigned
	}
	delete(n.assigned, p)
	return nil
}

func (n *fakeNode) Assigned(ctx context.Context) ([]admin.Assignment, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []admin.Assignment
	for p, c := range n.assigned {
		out = append(out, admin.Assignment{Publisher: p, Continued: c})
	}
	return out, nil
}

func (n *fakeNode) Preferred(ctx context.Context) ([]peer.ID, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.preferred), nil
}

func (n *fakeNode) Handoff(ctx context.Context, p peer.ID, req admin.HandoffRequest) error {
	n.mu.Lock()
	n.handoffs = append(n.handoffs, req)
	n.handoffPubs = append(n.handoffPubs, p)
	hang := n.hangHandoff
	n.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.frozen:
		return admin.ErrFrozen
	case hasKey(n.assigned, p):
		return admin.ErrAlreadyAssigned
	}
	n.assigned[p] = req.FrozenID
	return nil
}

func (n *fakeNode) Status(ctx context.Context) (admin.Status, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return admin.Status{ID: n.id, Frozen: n.frozen, Usage: -1}, nil
}

func (n *fakeNode) set(f func(n *fakeNode)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f(n)
}

func (n *fakeNode) pollCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.polls
}

func (n *fakeNode) holds(p peer.ID) (continued peer.ID, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.assigned[p]
	return c, ok
}

func (n *fakeNode) handoffCount(p peer.ID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, q := range n.handoffPubs {
		if q == p {
			k++
		}
	}
	return k
}

// fakeIndexer is a fake node behind the real admin handler, with an
// announce receiver as its ingest API.
type fakeIndexer struct {
	name   string
	node   *fakeNode
	admin  *httptest.Server
	ingest *httptest.Server
	recv   *announce.Receiver
}

func newFakeIndexer(t *testing.T, name string, assigned ...admin.Assignment) *fakeIndexer {
	t.Helper()
	n := &fakeNode{id: newPeerID(t), assigned: map[peer.ID]peer.ID{}}
	for _, a := range assigned {
		n.assigned[a.Publisher] = a.Continued
	}
	h, err := admin.NewHandler(n)
	if err != nil {
		t.Fatal(err)
	}
	adm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		down := n.down
		if r.Method == http.MethodGet && r.URL.Path == "/ingest/assigned" {
			n.polls++
		}
		n.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	recv, err := announce.NewReceiver()
	if err != nil {
		t.Fatal(err)
	}
	ing := httptest.NewServer(recv)
	t.Cleanup(func() {
		adm.Close()
		ing.Close()
		recv.Close()
	})
	return &fakeIndexer{name: name, node: n, admin: adm, ingest: ing, recv: recv}
}

func (f *fakeIndexer) config() assigner.ServiceIndexer {
	return assigner.ServiceIndexer{ID: f.name, AdminURL: f.admin.URL, IngestURL: f.ingest.URL,
		FindURL: "http://find-" + f.name + ".invalid:3000"}
}

// nextAnnounce waits for an announce forwarded to f.
func (f *fakeIndexer) nextAnnounce(t *testing.T) announce.Announce {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	a, err := f.recv.Next(ctx)
	if err != nil {
		t.Fatalf("%s: no announce forwarded: %v", f.name, err)
	}
	return a
}
