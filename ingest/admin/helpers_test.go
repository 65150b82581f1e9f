package admin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// testID returns a deterministic Ed25519 peer ID.
func testID(t testing.TB, n byte) peer.ID {
	t.Helper()
	var seed [32]byte
	seed[0] = n
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fakeNode is a Node (with every optional capability) that records its
// calls and answers from its fields. Safe for concurrent use.
type fakeNode struct {
	mu        sync.Mutex
	calls     []string
	handoffs  []admin.HandoffRequest
	syncs     []admin.SyncRequest
	errs      map[string]error // by method name
	assigned  []admin.Assignment
	preferred []peer.ID
	status    admin.Status
	ingest    []admin.PublisherStatus
}

func newFakeNode(id peer.ID) *fakeNode {
	return &fakeNode{errs: map[string]error{}, status: admin.Status{ID: id, Usage: 12.5}}
}

func (f *fakeNode) record(method string, publisher peer.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := method
	if publisher != "" {
		call += " " + publisher.String()
	}
	f.calls = append(f.calls, call)
	return f.errs[method]
}

func (f *fakeNode) setErr(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = err
}

func (f *fakeNode) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeNode) Assign(_ context.Context, p peer.ID) error   { return f.record("Assign", p) }
func (f *fakeNode) Unassign(_ context.Context, p peer.ID) error { return f.record("Unassign", p) }

func (f *fakeNode) Assigned(context.Context) ([]admin.Assignment, error) {
	if err := f.record("Assigned", ""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.assigned, nil
}

func (f *fakeNode) Preferred(context.Context) ([]peer.ID, error) {
	if err := f.record("Preferred", ""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.preferred, nil
}

func (f *fakeNode) Handoff(_ context.Context, p peer.ID, req admin.HandoffRequest) error {
	if err := f.record("Handoff", p); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handoffs = append(f.handoffs, req)
	return nil
}

func (f *fakeNode) Status(context.Context) (admin.Status, error) {
	if err := f.record("Status", ""); err != nil {
		return admin.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *fakeNode) Freeze(context.Context) error { return f.record("Freeze", "") }

func (f *fakeNode) Sync(_ context.Context, p peer.ID, req admin.SyncRequest) error {
	if err := f.record("Sync", p); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs = append(f.syncs, req)
	return nil
}

func (f *fakeNode) IngestStatus(context.Context) ([]admin.PublisherStatus, error) {
	if err := f.record("IngestStatus", ""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ingest, nil
}

// coreNode hides the optional capabilities of the Node it embeds.
type coreNode struct{ admin.Node }

// newHandler is admin.NewHandler that fails t on an error.
func newHandler(t testing.TB, node admin.Node, opts ...admin.Option) http.Handler {
	t.Helper()
	h, err := admin.NewHandler(node, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serve starts the handler of node on 127.0.0.1 and returns its URL and a
// client of it.
func serve(t *testing.T, node admin.Node, opts []admin.Option, copts ...admin.ClientOption) (*httptest.Server, *admin.Client) {
	t.Helper()
	srv := httptest.NewServer(newHandler(t, node, opts...))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on 127.0.0.1: %s", srv.URL)
	}
	c, err := admin.NewClient(srv.URL, append([]admin.ClientOption{admin.WithHTTPClient(srv.Client())}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// do sends one raw request to h and returns the recorded answer. A
// target that is a path goes to Host 127.0.0.1:3002, as a request to
// DefaultListenAddr does (httptest's default, example.com, is a foreign
// Host that a handler without a token refuses).
func do(t testing.TB, h http.Handler, method, target string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, body)
	if strings.HasPrefix(target, "/") {
		r.Host = admin.DefaultListenAddr
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func jsonf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
