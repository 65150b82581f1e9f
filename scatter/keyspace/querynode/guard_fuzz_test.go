package querynode

import (
	"bytes"
	"os"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// FuzzGuardLog feeds arbitrary logs to the guard's replay: it never
// panics, and a log it accepts holds only whole records.
func FuzzGuardLog(f *testing.F) {
	mh, _ := multihash.Sum([]byte("x"), multihash.SHA2_256, -1)
	p := peer.ID(mh)
	g := newTestGuard()
	for _, op := range []keyspace.Op{
		{Kind: keyspace.OpRemove, Value: store.Value{ProviderID: p, ContextID: []byte("c")}, Multihashes: []multihash.Multihash{mh}},
		{Kind: keyspace.OpUpdateMetadata, Value: store.Value{ProviderID: p, ContextID: []byte("c"), Metadata: []byte("m")}},
		{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: p, ContextID: []byte("c")}},
		{Kind: keyspace.OpRemoveProvider, Value: store.Value{ProviderID: p}},
		{Kind: keyspace.OpDeleteProvider, Value: store.Value{ProviderID: p}},
	} {
		g.observe(&op)
	}
	f.Add(g.pending)
	f.Add(g.pending[:len(g.pending)-3])
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"K":"rm","P":"AA==","H":["AAE="]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := newTestGuard()
		n, err := g.replay(bytes.NewReader(data))
		if err != nil {
			return
		}
		if n > int64(len(data)) || (n > 0 && data[n-1] != '\n') {
			t.Fatalf("replay kept %d bytes of %d, not ending a record", n, len(data))
		}
	})
}

func newTestGuard() *guard {
	return &guard{tomb: map[string]struct{}{}, ctxs: map[string]struct{}{}, provs: map[peer.ID]struct{}{}, meta: map[string][]byte{}, recs: map[peer.ID]struct{}{}}
}

// A torn last record (a crash mid-append) is cut when the guard reopens;
// the records before it stay.
func TestGuardTornRecord(t *testing.T) {
	dir := t.TempDir()
	g, err := openGuard(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	mh, _ := multihash.Sum([]byte("x"), multihash.SHA2_256, -1)
	p := peer.ID(mh)
	g.mu.Lock()
	g.observe(&keyspace.Op{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: p, ContextID: []byte("c")}})
	err = g.sync()
	g.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	g.close(false)
	path := guardPath(dir, 5)
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write([]byte(`{"K":"rp","P":`))
	fh.Close()
	g, err = openGuard(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close(true)
	if _, ok := g.ctxs[ctxKey(p, []byte("c"))]; !ok || len(g.provs) != 0 {
		t.Fatalf("after reopening: ctxs %v provs %v", g.ctxs, g.provs)
	}
	if fi, _ := os.Stat(path); fi.Size() != g.size {
		t.Fatalf("torn record not cut: file %d bytes, records %d", fi.Size(), g.size)
	}
	// Another epoch's guard removes this one.
	g2, err := openGuard(dir, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.close(true)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("guard of epoch 5 kept beside epoch 6: %v", err)
	}
}
