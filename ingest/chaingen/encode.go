package chaingen

// Encoding an ad's blocks: signatures, ExtendedProvider records and entry chunks.

import (
	"crypto/sha256"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/schema"
)

// sign signs ad with the publisher key; the entries of an ExtendedProvider
// are signed by their own keys, the provider's entry by the provider key.
func (c *Chain) sign(ad *schema.Advertisement) error {
	if ad.ExtendedProvider == nil {
		return ad.Sign(c.PublisherKey)
	}
	keyFor := func(id string) (crypto.PrivKey, error) {
		if k, ok := c.extKeys[id]; ok {
			return k, nil
		}
		return nil, fmt.Errorf("no key for extended provider %s", id)
	}
	if err := ad.SignWithExtendedProviders(c.ProviderKey, keyFor); err != nil {
		return err
	}
	if !c.cfg.PublisherSigns {
		return nil
	}
	// The ad signature covers neither ExtendedProvider nor the entries'
	// signatures, so the publisher re-signs the ad alone.
	ep := ad.ExtendedProvider
	ad.ExtendedProvider = nil
	err := ad.Sign(c.PublisherKey)
	ad.ExtendedProvider = ep
	return err
}

func (c *Chain) extendedProvider(n int, meta []byte) *schema.ExtendedProvider {
	ep := &schema.ExtendedProvider{
		Override: (n/c.cfg.ExtendedEvery)%2 == 0,
		Providers: []schema.ProviderEntry{
			{ID: c.Provider.String(), Addresses: c.addrs, Metadata: meta},
		},
	}
	count := 1 + (n/c.cfg.ExtendedEvery)%2
	for i := range count {
		ep.Providers = append(ep.Providers, schema.ProviderEntry{
			ID: c.Extended[i].String(), Addresses: c.extAddrs[i], Metadata: c.extMeta,
		})
	}
	return ep
}

// entryChunks encodes the multihashes of spans as a chain of entry chunks
// and returns the CID of the first one.
func (c *Chain) entryChunks(spans []span) (cid.Cid, []block, error) {
	var total uint64
	for _, s := range spans {
		total += s.n
	}
	const mhLen = 2 + sha256.Size
	buf := make([]byte, 0, total*mhLen)
	mhs := make([]multihash.Multihash, 0, total)
	for _, s := range spans {
		for ord := s.start; ord < s.start+s.n; ord++ {
			at := len(buf)
			buf = appendMultihash(buf, c.cfg.Seed, ord)
			mhs = append(mhs, buf[at:len(buf):len(buf)])
		}
	}
	size := c.cfg.ChunkSize
	blocks := make([]block, 0, (len(mhs)+size-1)/size)
	next := cid.Undef
	for end := len(mhs); end > 0; {
		start := (end - 1) / size * size
		ch := schema.EntryChunk{Entries: mhs[start:end], Next: next}
		data, id, err := ch.EncodeAs(c.cfg.Codec)
		if err != nil {
			return cid.Undef, nil, err
		}
		blocks = append(blocks, block{id, data})
		next, end = id, start
	}
	return next, blocks, nil
}
