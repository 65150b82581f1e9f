package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// flushOrder is a memory store that records the order of its provider
// writes and flushes, and can fail its Flush.
type flushOrder struct {
	*memory.Store
	mu       sync.Mutex
	ops      []string
	flushErr error
}

func (s *flushOrder) op(o string) {
	s.mu.Lock()
	s.ops = append(s.ops, o)
	s.mu.Unlock()
}

func (s *flushOrder) PutProvider(ctx context.Context, info store.ProviderInfo) error {
	s.op("put")
	return s.Store.PutProvider(ctx, info)
}

func (s *flushOrder) DeleteProvider(ctx context.Context, id peer.ID) error {
	s.op("delete")
	return s.Store.DeleteProvider(ctx, id)
}

func (s *flushOrder) Flush(ctx context.Context) error {
	s.op("flush")
	if s.flushErr != nil {
		return s.flushErr
	}
	return s.Store.Flush(ctx)
}

func (s *flushOrder) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ops
	s.ops = nil
	return o
}

// The freeze callbacks and the handoff's records flush the store after
// their writes, before they return: what they wrote is durable before the
// freezer (or the registry) records the step done. A failed flush fails
// the step.
func TestFreezeHooksFlush(t *testing.T) {
	ctx := context.Background()
	st := &flushOrder{Store: memory.New()}
	defer st.Close()
	last := testCid(t, "last")
	id := peerID(t, "provider")
	if err := st.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id}, Publisher: peer.AddrInfo{ID: id}, LastAdvertisement: last}); err != nil {
		t.Fatal(err)
	}
	st.take()

	at := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	if err := handoff.OnFreeze(st, nil)(ctx, at); err != nil {
		t.Fatal(err)
	}
	if ops := st.take(); !slices.Equal(ops, []string{"put", "flush"}) {
		t.Fatalf("freeze: %v, want the snapshot put, then a flush", ops)
	}
	if rec, err := st.Provider(ctx, id); err != nil || rec.FrozenAt != last || !rec.FrozenAtTime.Equal(at) {
		t.Fatalf("after the freeze: %+v, %v", rec, err)
	}

	ing, err := ingest.New(st, newMapDS(), httpSyncer)
	if err != nil {
		t.Fatal(err)
	}
	if err := handoff.OnUnfreeze(st, ing, nil)(ctx, at); err != nil {
		t.Fatal(err)
	}
	if ops := st.take(); len(ops) < 2 || ops[len(ops)-1] != "flush" || !slices.Contains(ops, "put") {
		t.Fatalf("unfreeze: %v, want the records put, then a flush", ops)
	}
	if rec, err := st.Provider(ctx, id); err != nil || rec.FrozenAt.Defined() {
		t.Fatalf("after the unfreeze: %+v, %v; want FrozenAt cleared", rec, err)
	}

	recs := handoff.DurableRecords(st)
	if err := recs.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: peerID(t, "other")}}); err != nil {
		t.Fatal(err)
	}
	if err := recs.DeleteProvider(ctx, peerID(t, "other")); err != nil {
		t.Fatal(err)
	}
	if ops := st.take(); !slices.Equal(ops, []string{"put", "flush", "delete", "flush"}) {
		t.Fatalf("durable records: %v, want each write flushed", ops)
	}

	boom := errors.New("disk gone")
	st.flushErr = boom
	for name, step := range map[string]func() error{
		"freeze":   func() error { return handoff.OnFreeze(st, nil)(ctx, at) },
		"unfreeze": func() error { return handoff.OnUnfreeze(st, ing, nil)(ctx, at) },
		"put":      func() error { return recs.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id}}) },
		"delete":   func() error { return recs.DeleteProvider(ctx, id) },
	} {
		if err := step(); !errors.Is(err, boom) {
			t.Errorf("%s with a failing flush: %v, want it failed", name, err)
		}
	}
}

// An indexer connects its freezer to its store and ingester with
// OnFreeze and OnUnfreeze (freeze.WithOnFreeze, freeze.WithOnUnfreeze).
func ExampleOnFreeze() {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	id, _ := peer.Decode("12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf")
	mh, _ := multihash.Sum([]byte("head"), multihash.SHA2_256, -1)
	head := cid.NewCidV1(cid.DagJSON, mh)
	_ = st.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id}, LastAdvertisement: head})

	onFreeze := handoff.OnFreeze(st, nil) // freeze.WithOnFreeze(onFreeze) in a node
	if err := onFreeze(ctx, time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)); err != nil {
		fmt.Println(err)
		return
	}
	rec, _ := st.Provider(ctx, id)
	fmt.Println(rec.FrozenAt == head, rec.FrozenAtTime.Format(time.RFC3339))
	// Output: true 2026-12-06T06:00:00Z
}
