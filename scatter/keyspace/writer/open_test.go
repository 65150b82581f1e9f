package writer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/writer"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// oneNode is a layout of one query node, which nothing serves: the
// tests here never Run the Writer, so the batches stay in the outbox.
func oneNode(epoch uint64) keyspace.Layout {
	return keyspace.Layout{Epoch: epoch, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://127.0.0.1:1"}}, Current: []string{"q1"}, Writers: []string{"w1"}}
}

// putOne puts one multihash and flushes it into the outbox.
func putOne(t *testing.T, w *writer.Writer, data string) {
	t.Helper()
	ctx := context.Background()
	p, err := peer.Decode("12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA")
	if err != nil {
		t.Fatal(err)
	}
	mh, _ := multihash.Sum([]byte(data), multihash.SHA2_256, -1)
	if err := w.Put(ctx, store.Value{ProviderID: p, ContextID: []byte("c"), Metadata: []byte{0x80, 0x12}}, mh); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// Open opens an outbox of its own under dir, which Close closes (a
// second Close is a no-op), and a Writer opened again on dir finds the
// batches the first left.
func TestOpenOwnsOutbox(t *testing.T) {
	dir := t.TempDir()
	w, err := writer.Open(dir, writer.Config{Name: "w1", Records: memory.New()}, oneNode(1))
	if err != nil {
		t.Fatal(err)
	}
	putOne(t, w, "a")
	if got := w.Status().Owners["q1"].Pending; got != 1 {
		t.Fatalf("pending after a put and a flush: %d, want 1", got)
	}
	// While the Writer is open, its outbox directory is locked.
	if ob, err := outbox.Open(filepath.Join(dir, writer.OutboxDir)); !errors.Is(err, outbox.ErrLocked) {
		if ob != nil {
			ob.Close()
		}
		t.Fatalf("outbox.Open of an open Writer's outbox: %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v, want nil", err)
	}
	if err := w.Flush(context.Background()); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Flush after Close: %v, want store.ErrClosed", err)
	}

	// Closed: the directory is free, and a new Writer resumes it.
	w2, err := writer.Open(dir, writer.Config{Name: "w1", Records: memory.New()}, oneNode(1))
	if err != nil {
		t.Fatalf("Open after Close: %v (did Close release the outbox?)", err)
	}
	defer w2.Close()
	if got := w2.Status().Owners["q1"].Pending; got != 1 {
		t.Fatalf("pending after reopening: %d, want the 1 batch the first Writer left", got)
	}
	putOne(t, w2, "b")
	if got := w2.Status().Owners["q1"].Pending; got != 2 {
		t.Fatalf("pending after another put: %d, want 2", got)
	}
}

// Close seals what was put since the last Flush before it closes the
// outbox.
func TestOpenCloseSeals(t *testing.T) {
	dir := t.TempDir()
	w, err := writer.Open(dir, writer.Config{Name: "w1", Records: memory.New()}, oneNode(1))
	if err != nil {
		t.Fatal(err)
	}
	mh, _ := multihash.Sum([]byte("unflushed"), multihash.SHA2_256, -1)
	p, _ := peer.Decode("12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA")
	if err := w.Put(context.Background(), store.Value{ProviderID: p, ContextID: []byte("c")}, mh); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.Open(filepath.Join(dir, writer.OutboxDir))
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if got := ob.Status("q1").Pending; got != 1 {
		t.Fatalf("pending in the outbox after Close: %d, want the unflushed put sealed", got)
	}
}

// An outbox given to New stays the caller's: Close leaves it open.
func TestNewLeavesCallersOutbox(t *testing.T) {
	ob, err := outbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	w, err := writer.New(writer.Config{Name: "w1", Records: memory.New(), Outbox: ob}, oneNode(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.Append("q1", 1, []byte("x")); err != nil {
		t.Fatalf("Append to the caller's outbox after the Writer's Close: %v, want it still open", err)
	}
}

// Open refuses a config it cannot use, naming the problem, and creates
// nothing when it does.
func TestOpenRefuses(t *testing.T) {
	ob, err := outbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	for name, c := range map[string]struct {
		dir  string
		cfg  writer.Config
		l    keyspace.Layout
		want string
	}{
		"no dir":         {"", writer.Config{Name: "w1", Records: memory.New()}, oneNode(1), "directory"},
		"Outbox set":     {"d", writer.Config{Name: "w1", Records: memory.New(), Outbox: ob}, oneNode(1), "Outbox"},
		"no Name":        {"d", writer.Config{Records: memory.New()}, oneNode(1), "Name"},
		"no Records":     {"d", writer.Config{Name: "w1"}, oneNode(1), "Records"},
		"not a writer":   {"d", writer.Config{Name: "w9", Records: memory.New()}, oneNode(1), "w9"},
		"invalid layout": {"d", writer.Config{Name: "w1", Records: memory.New()}, keyspace.Layout{Epoch: 1}, "layout"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := c.dir
			if dir != "" {
				dir = filepath.Join(t.TempDir(), dir)
			}
			w, err := writer.Open(dir, c.cfg, c.l)
			if err == nil {
				w.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
			if dir != "" {
				if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("a refused Open created %s (%v)", dir, serr)
				}
			}
		})
	}
}

// ReloadFile takes a newer layout from a file, and refuses a file that
// does not load or holds an older epoch, keeping its layout.
func TestReloadFile(t *testing.T) {
	w, err := writer.Open(t.TempDir(), writer.Config{Name: "w1", Records: memory.New()}, oneNode(2))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	save := func(name string, l keyspace.Layout) string {
		path := filepath.Join(dir, name)
		if err := keyspace.Save(path, l); err != nil {
			t.Fatal(err)
		}
		return path
	}
	garbled := filepath.Join(dir, "garbled.json")
	if err := os.WriteFile(garbled, []byte(`{"Epoch": 3, `), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		name, path string
		is         error // nil: any error
	}{
		{"missing file", filepath.Join(dir, "missing.json"), os.ErrNotExist},
		{"garbled file", garbled, keyspace.ErrInvalidLayout},
		{"older epoch", save("old.json", oneNode(1)), keyspace.ErrStaleEpoch},
	}
	for _, c := range refused {
		err := w.ReloadFile(c.path)
		switch {
		case err == nil:
			t.Errorf("%s: ReloadFile succeeded", c.name)
		case c.is != nil && !errors.Is(err, c.is):
			t.Errorf("%s: %v, want an error wrapping %v", c.name, err, c.is)
		}
		if got := w.Layout().Epoch; got != 2 {
			t.Errorf("%s: epoch %d after the refusal, want 2 kept", c.name, got)
		}
	}
	if err := w.ReloadFile(save("same.json", oneNode(2))); err != nil {
		t.Errorf("same epoch: %v, want nil", err)
	}
	if err := w.ReloadFile(save("new.json", oneNode(3))); err != nil {
		t.Fatalf("newer epoch: %v", err)
	}
	if got := w.Layout().Epoch; got != 3 {
		t.Fatalf("epoch %d after reloading epoch 3", got)
	}
}

// NoIndex answers lookups 421 with CORS and no-store headers and a body
// naming the epoch; other paths and preflights go to the wrapped handler.
func TestNoIndex(t *testing.T) {
	w, err := writer.Open(t.TempDir(), writer.Config{Name: "w1", Records: memory.New()}, oneNode(7))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	inner := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("X-Inner", "1")
		rw.WriteHeader(http.StatusTeapot)
	})
	h := w.NoIndex(inner, func(path string) bool { return strings.HasPrefix(path, "/multihash/") })
	for _, c := range []struct {
		method, path string
		misdirected  bool
	}{
		{"GET", "/multihash/abc", true},
		{"POST", "/multihash/abc", true},
		{"OPTIONS", "/multihash/abc", false},
		{"GET", "/providers", false},
		{"GET", "/health", false},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		res := rec.Result()
		body := rec.Body.String()
		if !c.misdirected {
			if res.StatusCode != http.StatusTeapot || res.Header.Get("X-Inner") != "1" {
				t.Errorf("%s %s: %d %q, want it passed to the wrapped handler", c.method, c.path, res.StatusCode, body)
			}
			continue
		}
		if res.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s %s: %d, want 421", c.method, c.path, res.StatusCode)
		}
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s %s: Access-Control-Allow-Origin %q, want *", c.method, c.path, got)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", c.method, c.path, got)
		}
		for _, want := range []string{"ingest node", "epoch 7", "front end", "query nodes"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s %s: body %q does not say %q", c.method, c.path, body, want)
			}
		}
	}
	// The body names the epoch in force, not the one at wrapping.
	if err := w.SetLayout(oneNode(8)); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/multihash/abc", nil))
	if !strings.Contains(rec.Body.String(), "epoch 8") {
		t.Errorf("after SetLayout(epoch 8): body %q", rec.Body.String())
	}
}

// Config.SegmentSize sizes the segments of the outbox Open opens: with
// segments smaller than a batch, each batch starts a segment file of its
// own (with the default size they share one). New, which takes an outbox
// opened already, and a negative size are refused.
func TestOpenSegmentSize(t *testing.T) {
	segs := func(t *testing.T, size int64) int {
		t.Helper()
		dir := t.TempDir()
		w, err := writer.Open(dir, writer.Config{Name: "w1", Records: memory.New(), SegmentSize: size}, oneNode(1))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for _, d := range []string{"a", "b", "c"} {
			putOne(t, w, d)
		}
		files, err := filepath.Glob(filepath.Join(dir, writer.OutboxDir, "q-*", "*.seg"))
		if err != nil {
			t.Fatal(err)
		}
		return len(files)
	}
	if n := segs(t, 0); n != 1 {
		t.Errorf("default segment size: %d segment files for three batches, want 1", n)
	}
	if n := segs(t, 64); n != 3 {
		t.Errorf("SegmentSize 64: %d segment files for three batches, want 3", n)
	}
	ob, err := outbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if _, err := writer.New(writer.Config{Name: "w1", Records: memory.New(), Outbox: ob, SegmentSize: 64}, oneNode(1)); !errors.Is(err, writer.ErrInvalidConfig) {
		t.Errorf("New with SegmentSize: %v, want ErrInvalidConfig", err)
	}
	if _, err := writer.Open(t.TempDir(), writer.Config{Name: "w1", Records: memory.New(), SegmentSize: -1}, oneNode(1)); !errors.Is(err, writer.ErrInvalidConfig) {
		t.Errorf("Open with SegmentSize -1: %v, want ErrInvalidConfig", err)
	}
}
