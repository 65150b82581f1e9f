package pebble_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indexkit/indexkit/store"
	ikpebble "github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

// settled lets the benchmarks flush the memtable before reading.
type settled struct{ *ikpebble.Store }

func (s settled) Settle() error { return settle(s.Pebble()) }

// settle flushes the memtable and compacts everything to the bottom level,
// the state a node's data spends most of its life in.
func settle(db *pebble.DB) error {
	if err := db.Flush(); err != nil {
		return err
	}
	return db.Compact(context.Background(), []byte{0}, []byte{0xff}, true)
}

func openStore(b *testing.B) store.Store {
	s, err := ikpebble.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return settled{s}
}

// raw drives Pebble directly, with the store's default options: it Sets the
// very keys and values the store Merges (0x01 ‖ multihash ‖ 0x00, holding
// the record ID), and reads them back with point Gets.
type raw struct {
	db  *pebble.DB
	key []byte
}

func openRaw(b *testing.B) storetest.Raw {
	o := ikpebble.DefaultOptions()
	o.Cache = pebble.NewCache(256 << 20)
	defer o.Cache.Unref()
	o.Logger = quiet{}
	db, err := pebble.Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	return &raw{db: db}
}

func (r *raw) entry(mh multihash.Multihash) []byte {
	r.key = append(append(r.key[:0], 0x01), mh...)
	return append(r.key, 0)
}

func (r *raw) Write(mhs []multihash.Multihash, id uint64) error {
	b := r.db.NewBatch()
	defer b.Close()
	v := binary.AppendUvarint(nil, id<<1)
	for _, mh := range mhs {
		if err := b.Set(r.entry(mh), v, nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.NoSync)
}

func (r *raw) Get(mh multihash.Multihash, _ uint64) (bool, error) {
	_, closer, err := r.db.Get(r.entry(mh))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

func (r *raw) Sync() error   { return r.db.LogData(nil, pebble.Sync) }
func (r *raw) Settle() error { return settle(r.db) }

func (r *raw) Size() (int64, error) { return int64(r.db.Metrics().DiskSpaceUsage()), nil }
func (r *raw) Close() error         { return r.db.Close() }

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(f string, a ...any) {
	panic(fmt.Sprintf(f, a...))
}

func BenchmarkPut(b *testing.B) { storetest.ComparePut(b, openStore, openRaw) }

func BenchmarkGet(b *testing.B) { storetest.CompareGet(b, openStore, openRaw) }

// BenchmarkUpdateMetadata pairs each context size with the raw floor of an
// update, a one-key commit, which does not depend on the size.
func BenchmarkUpdateMetadata(b *testing.B) { storetest.CompareUpdateMetadata(b, openStore, openRaw) }
