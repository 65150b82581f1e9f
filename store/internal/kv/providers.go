package kv

// Provider records: PutProvider, Provider, Providers, DeleteProvider.

import (
	"context"
	"errors"
	"iter"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// PutProvider implements [store.ProviderRecords].
func (db *DB) PutProvider(ctx context.Context, info store.ProviderInfo) error {
	if err := info.Validate(); err != nil {
		return db.wrap("put provider", err)
	}
	enc, err := encodeProvider(info)
	if err != nil {
		return db.wrap("put provider", err)
	}
	if err := db.begin(ctx, "put provider"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	digest := providerDigest(info)
	b := db.eng.NewBatch()
	defer b.Close()
	if err := b.Set(providerKey(info.AddrInfo.ID), enc); err != nil {
		return db.wrap("put provider", err)
	}
	db.vers.provMu.Lock()
	defer db.vers.provMu.Unlock()
	if err := b.Commit(); err != nil {
		return db.wrap("put provider", err)
	}
	db.vers.providerWritten(info.AddrInfo.ID, digest, true)
	return nil
}

// Provider implements [store.ProviderRecords].
func (db *DB) Provider(ctx context.Context, id peer.ID) (store.ProviderInfo, error) {
	if err := db.begin(ctx, "get provider"); err != nil {
		return store.ProviderInfo{}, err
	}
	defer db.opMu.RUnlock()
	var info store.ProviderInfo
	err := db.eng.Get(providerKey(id), func(v []byte) error {
		var err error
		info, err = decodeProvider(v)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return store.ProviderInfo{}, db.wrap("get provider "+id.String(), store.ErrNotFound)
	}
	if err != nil {
		return store.ProviderInfo{}, db.wrap("get provider", err)
	}
	return info, nil
}

// Providers implements [store.ProviderRecords].
func (db *DB) Providers(ctx context.Context) iter.Seq2[store.ProviderInfo, error] {
	return func(yield func(store.ProviderInfo, error) bool) {
		if err := db.begin(ctx, "list providers"); err != nil {
			yield(store.ProviderInfo{}, err)
			return
		}
		var infos []store.ProviderInfo
		err := db.eng.Scan([]byte{prefixProvider}, []byte{prefixProvider + 1}, func(_, val []byte) error {
			info, err := decodeProvider(val)
			if err != nil {
				return err
			}
			infos = append(infos, info)
			return nil
		})
		db.opMu.RUnlock()
		if err != nil {
			yield(store.ProviderInfo{}, db.wrap("list providers", err))
			return
		}
		for _, info := range infos {
			if !yield(info, nil) {
				return
			}
		}
	}
}

// DeleteProvider implements [store.ProviderRecords].
func (db *DB) DeleteProvider(ctx context.Context, id peer.ID) error {
	if err := db.begin(ctx, "delete provider"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	b := db.eng.NewBatch()
	defer b.Close()
	if err := b.Delete(providerKey(id)); err != nil {
		return db.wrap("delete provider", err)
	}
	db.vers.provMu.Lock()
	defer db.vers.provMu.Unlock()
	if err := b.Commit(); err != nil {
		return db.wrap("delete provider", err)
	}
	db.vers.providerWritten(id, 0, false)
	return nil
}
