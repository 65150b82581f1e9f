package ingest_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// flushLedger counts the index and provider-record writes a store took
// since its last Flush, and the walk positions committed while some were
// not flushed.
type flushLedger struct {
	mu        sync.Mutex
	unflushed int      // writes since the last Flush returned
	positions int      // position writes committed
	early     []string // position keys committed over unflushed writes
}

func (l *flushLedger) wrote() {
	l.mu.Lock()
	l.unflushed++
	l.mu.Unlock()
}

// ledgerStore is a real store whose writes the ledger counts.
type ledgerStore struct {
	store.Store
	l *flushLedger
}

func (s ledgerStore) Put(ctx context.Context, v store.Value, mhs ...multihash.Multihash) error {
	s.l.wrote()
	return s.Store.Put(ctx, v, mhs...)
}

func (s ledgerStore) Remove(ctx context.Context, p peer.ID, contextID []byte, mhs ...multihash.Multihash) error {
	s.l.wrote()
	return s.Store.Remove(ctx, p, contextID, mhs...)
}

func (s ledgerStore) RemoveProviderContext(ctx context.Context, p peer.ID, contextID []byte) error {
	s.l.wrote()
	return s.Store.RemoveProviderContext(ctx, p, contextID)
}

func (s ledgerStore) RemoveProvider(ctx context.Context, p peer.ID) error {
	s.l.wrote()
	return s.Store.RemoveProvider(ctx, p)
}

func (s ledgerStore) UpdateMetadata(ctx context.Context, p peer.ID, contextID, metadata []byte) error {
	s.l.wrote()
	return s.Store.UpdateMetadata(ctx, p, contextID, metadata)
}

func (s ledgerStore) PutProvider(ctx context.Context, info store.ProviderInfo) error {
	s.l.wrote()
	return s.Store.PutProvider(ctx, info)
}

func (s ledgerStore) DeleteProvider(ctx context.Context, id peer.ID) error {
	s.l.wrote()
	return s.Store.DeleteProvider(ctx, id)
}

func (s ledgerStore) Flush(ctx context.Context) error {
	s.l.mu.Lock()
	n := s.l.unflushed
	s.l.mu.Unlock()
	err := s.Store.Flush(ctx)
	if err == nil {
		s.l.mu.Lock()
		s.l.unflushed -= n // writes that raced with Flush stay counted
		s.l.mu.Unlock()
	}
	return err
}

// isPosition reports whether k claims advertisements applied: the last
// head, the count applied of a walk under way, or a done/ marker.
func isPosition(k datastore.Key) bool {
	s := k.String()
	return strings.HasSuffix(s, "/lastHead") || strings.HasSuffix(s, "/applied") || strings.Contains(s, "/done/")
}

// ledgerDS is a real datastore that checks, as each position write is
// committed, that the store holds no unflushed write.
type ledgerDS struct {
	datastore.Batching
	l *flushLedger
}

func (d ledgerDS) check(keys []datastore.Key) {
	d.l.mu.Lock()
	defer d.l.mu.Unlock()
	for _, k := range keys {
		if !isPosition(k) {
			continue
		}
		d.l.positions++
		if d.l.unflushed > 0 {
			d.l.early = append(d.l.early, k.String())
		}
	}
}

func (d ledgerDS) Put(ctx context.Context, k datastore.Key, v []byte) error {
	d.check([]datastore.Key{k})
	return d.Batching.Put(ctx, k, v)
}

func (d ledgerDS) Batch(ctx context.Context) (datastore.Batch, error) {
	b, err := d.Batching.Batch(ctx)
	if err != nil {
		return nil, err
	}
	return &ledgerBatch{Batch: b, d: d}, nil
}

type ledgerBatch struct {
	datastore.Batch
	d    ledgerDS
	puts []datastore.Key
}

func (b *ledgerBatch) Put(ctx context.Context, k datastore.Key, v []byte) error {
	b.puts = append(b.puts, k)
	return b.Batch.Put(ctx, k, v)
}

func (b *ledgerBatch) Commit(ctx context.Context) error {
	b.d.check(b.puts)
	return b.Batch.Commit(ctx)
}

// TestCheckpointFlushesFirst: every walk position the walker commits (a
// count applied, done/ markers, the last head) finds every index and
// provider-record write made before it flushed. A position saved over
// unflushed writes would claim advertisements a crash can lose, and the
// walk resumed after it would not apply them again.
func TestCheckpointFlushesFirst(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 903, Ads: 9, MhsPerAd: 5, RemoveEvery: 4, UpdateEvery: 3})
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	mem := memory.New()
	defer mem.Close()
	l := &flushLedger{}
	st := ledgerStore{Store: mem, l: l}
	ing := newIngester(t, st, ledgerDS{Batching: newDS(), l: l}, srcs, ingest.WithCheckpoint(2, 1<<62))
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), mem)
	if err := chain.Extend(3); err != nil {
		t.Fatal(err)
	}
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), mem)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.positions < 12 {
		t.Fatalf("%d position writes seen over two walks of 9 and 3 ads, want one per ad at least", l.positions)
	}
	if len(l.early) > 0 {
		t.Fatalf("%d of %d position writes committed before the store was flushed, first %s", len(l.early), l.positions, l.early[0])
	}
}
