package leveldb_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/indexkit/indexkit/store/storetest"
	ds "github.com/ipfs/go-datastore"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/multiformats/go-multihash"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// settled lets the benchmarks compact the database before reading, as the
// raw twin does.
type settled struct{ *leveldb.Store }

func (s settled) Settle() error {
	d, ok := s.Datastore().(*dsleveldb.Datastore)
	if !ok {
		return fmt.Errorf("leveldb store's datastore is a %T, not a *dsleveldb.Datastore", s.Datastore())
	}
	return settle(d)
}

// settle writes the memtable out and compacts the whole key range, so that
// reads on both sides see the same shape of tables.
func settle(d *dsleveldb.Datastore) error {
	return d.DB.CompactRange(util.Range{})
}

func openStore(b *testing.B) store.Store {
	s, err := leveldb.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return settled{s}
}

// raw drives go-ds-leveldb directly through go-datastore, with the same
// options as the store: one ds.Batch per Write, Putting the very keys the
// store writes ("/" ‖ 0x01 ‖ mh ‖ 0x00 ‖ id ‖ 0x09, empty value), committed
// with go-ds-leveldb's synced writes; lookups are point Gets of the entry.
type raw struct {
	d   *dsleveldb.Datastore
	key []byte
}

func openRaw(b *testing.B) storetest.Raw {
	d, err := dsleveldb.NewDatastore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return &raw{d: d}
}

// entry returns the datastore key of the index entry of (mh, id).
func (r *raw) entry(mh multihash.Multihash, id uint64) ds.Key {
	r.key = append(append(r.key[:0], '/', 0x01), mh...)
	r.key = binary.BigEndian.AppendUint64(append(r.key, 0), id)
	return ds.RawKey(string(append(r.key, 0x09)))
}

func (r *raw) Write(mhs []multihash.Multihash, id uint64) error {
	ctx := context.Background()
	b, err := r.d.Batch(ctx)
	if err != nil {
		return err
	}
	for _, mh := range mhs {
		if err := b.Put(ctx, r.entry(mh, id), []byte{}); err != nil {
			return err
		}
	}
	return b.Commit(ctx)
}

func (r *raw) Get(mh multihash.Multihash, id uint64) (bool, error) {
	_, err := r.d.Get(context.Background(), r.entry(mh, id))
	if errors.Is(err, ds.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Sync does nothing: go-ds-leveldb syncs every batch as it commits.
func (r *raw) Sync() error   { return nil }
func (r *raw) Settle() error { return settle(r.d) }

func (r *raw) Size() (int64, error) {
	n, err := r.d.DiskUsage(context.Background())
	return int64(n), err
}

func (r *raw) Close() error { return r.d.Close() }

func BenchmarkPut(b *testing.B) { storetest.ComparePut(b, openStore, openRaw) }

func BenchmarkGet(b *testing.B) { storetest.CompareGet(b, openStore, openRaw) }

// BenchmarkUpdateMetadata pairs each context size with the raw floor of an
// update, a one-key commit, which does not depend on the size.
func BenchmarkUpdateMetadata(b *testing.B) { storetest.CompareUpdateMetadata(b, openStore, openRaw) }
