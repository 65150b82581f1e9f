package freeze_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/freeze"
)

// FileStore: nothing saved reads as nil; a save replaces the file whole and
// leaves no temporary file; a torn temporary file left by a crash is
// ignored; a failed save keeps the old state.
func TestFileStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "freeze.json")
	st := freeze.FileStore(path)
	if b, err := st.Load(ctx); b != nil || err != nil {
		t.Fatalf("Load of nothing = %q, %v", b, err)
	}
	for _, s := range []string{`{"state":"freezing"}`, `{"state":"frozen"}`} {
		if err := st.Save(ctx, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if b, err := st.Load(ctx); string(b) != s || err != nil {
			t.Fatalf("Load = %q, %v; want %q", b, err, s)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files after saves: %v", entries)
	}

	// A crash in the middle of a save leaves a torn temporary file: Load
	// reads the last complete state, and the next save works.
	torn := path + ".tmp-123456"
	if err := os.WriteFile(torn, []byte(`{"sta`), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := st.Load(ctx); string(b) != `{"state":"frozen"}` {
		t.Errorf("Load beside a torn file = %q", b)
	}
	if err := st.Save(ctx, []byte(`{"state":"unfrozen"}`)); err != nil {
		t.Fatal(err)
	}
	if b, _ := st.Load(ctx); string(b) != `{"state":"unfrozen"}` {
		t.Errorf("Load = %q", b)
	}

	// A save that cannot complete keeps the old state.
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	if os.Geteuid() != 0 { // root writes anyway
		if err := st.Save(ctx, []byte("x")); err == nil {
			t.Error("Save into a read-only directory succeeded")
		}
	}
	os.Chmod(dir, 0o700)
	bad := freeze.FileStore(filepath.Join(dir, "missing", "freeze.json"))
	if err := bad.Save(ctx, []byte("x")); err == nil || !strings.Contains(err.Error(), "freeze: save state") {
		t.Errorf("Save into a missing directory: %v", err)
	}
	if b, _ := st.Load(ctx); string(b) != `{"state":"unfrozen"}` {
		t.Errorf("Load after failed saves = %q", b)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := st.Save(cctx, []byte("x")); err == nil {
		t.Error("Save with a cancelled context succeeded")
	}
}

// A torn temporary file does not disturb a Freezer either.
func TestFileStoreTornFreezer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "freeze.json")
	if err := os.WriteFile(path+".tmp-99", []byte(`{"state":"froz`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newFakeDisk()
	d.set("/data", 1, 10)
	f := must[*freeze.Freezer](t)(freeze.Open(ctx, freeze.FileStore(path), newMon(t, d)))
	if f.Frozen() {
		t.Error("a torn temporary file froze the node")
	}
}
