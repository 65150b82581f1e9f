package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime/codec/dagcbor"
	"github.com/ipld/go-ipld-prime/node/basicnode"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
)

// storeApplier applies advertisements of one publisher to the Ingester's
// store.
type storeApplier struct {
	i   *Ingester
	pub *publisher
}

func (a storeApplier) Flush(ctx context.Context) error { return a.i.st.Flush(ctx) }

// Apply implements [Applier]. It checks everything it can before it
// writes: the addresses, the context ID; then it changes the index, and
// last the provider record.
func (a storeApplier) Apply(ctx context.Context, src Syncer, ad Ad) error {
	x := ad.Ad
	addrs, err := parseAddrs(x.Addresses)
	if err != nil {
		return fmt.Errorf("%w: Addresses: %w", ErrInvalidBlock, err)
	}
	var ext []peer.AddrInfo
	var extMeta [][]byte
	if ep := x.ExtendedProvider; ep != nil {
		for _, p := range ep.Providers {
			id, _ := peer.Decode(p.ID) // validated by the schema
			if id == ad.Provider {
				continue // the provider itself serves its content anyway
			}
			pa, err := parseAddrs(p.Addresses)
			if err != nil {
				return fmt.Errorf("%w: extended provider %s: %w", ErrInvalidBlock, id, err)
			}
			ext = append(ext, peer.AddrInfo{ID: id, Addrs: pa})
			extMeta = append(extMeta, p.Metadata)
		}
	}

	var n int
	switch {
	case ad.Removed || len(x.ContextID) == 0 && !x.HasEntries():
		// A newer ad removes the context, or the ad only updates the
		// provider record (chain-level extended providers, addresses).
	case x.IsRm:
		err = a.i.st.RemoveProviderContext(ctx, ad.Provider, x.ContextID)
	case !x.HasEntries():
		// Metadata only. A context not stored has no multihashes for
		// the metadata to apply to: nothing to do.
		err = a.i.st.UpdateMetadata(ctx, ad.Provider, x.ContextID, x.Metadata)
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	case len(x.ContextID) == 0:
		err = fmt.Errorf("%w: advertisement with entries has an empty ContextID", ErrInvalidBlock)
	default:
		n, err = a.i.putEntries(ctx, src, ad)
	}
	if err != nil {
		return err
	}
	if n > 0 {
		a.pub.entries.Add(uint64(n))
		if h := a.i.cfg.hooks.EntriesIndexed; h != nil {
			h(a.pub.id, ad.Provider, ad.Cid, n)
		}
	}

	return a.i.updateProvider(ctx, ad.Provider, func(info *store.ProviderInfo) {
		if len(addrs) > 0 {
			info.AddrInfo.Addrs = addrs
		}
		info.Publisher = peer.AddrInfo{ID: a.pub.id, Addrs: a.pub.announcedAddrs()}
		info.LastAdvertisement = ad.Cid
		info.LastAdvertisementTime = time.Now()
		info.LastError, info.LastErrorTime = "", time.Time{}
		updateExtended(info, x, ext, extMeta)
	})
}

// updateExtended records the extended providers of x (already parsed into
// ext and extMeta) in info, and drops those of a removed context.
func updateExtended(info *store.ProviderInfo, x *schema.Advertisement, ext []peer.AddrInfo, extMeta [][]byte) {
	ep := info.ExtendedProviders
	if x.IsRm && len(x.ContextID) > 0 && ep != nil {
		ep.Contextual = slices.DeleteFunc(ep.Contextual, func(c store.ContextualExtendedProviders) bool {
			return bytes.Equal(c.ContextID, x.ContextID)
		})
	}
	if x.ExtendedProvider != nil {
		if ep == nil {
			ep = &store.ExtendedProviders{}
		}
		if len(x.ContextID) == 0 {
			ep.Providers, ep.Metadatas = ext, extMeta
		} else {
			c := store.ContextualExtendedProviders{
				Override:  x.ExtendedProvider.Override,
				ContextID: bytes.Clone(x.ContextID),
				Providers: ext,
				Metadatas: extMeta,
			}
			i := slices.IndexFunc(ep.Contextual, func(c store.ContextualExtendedProviders) bool {
				return bytes.Equal(c.ContextID, x.ContextID)
			})
			if i >= 0 {
				ep.Contextual[i] = c
			} else {
				ep.Contextual = append(ep.Contextual, c)
			}
		}
	}
	if ep != nil && len(ep.Providers) == 0 && len(ep.Contextual) == 0 {
		ep = nil
	}
	info.ExtendedProviders = ep
}

func parseAddrs(ss []string) ([]multiaddr.Multiaddr, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	out := make([]multiaddr.Multiaddr, 0, len(ss))
	for _, s := range ss {
		m, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// putEntries fetches the entry chain of ad and puts its multihashes into
// the store, batchSize at a time. Each chunk is fetched and verified in
// full before any of its multihashes is put, so an advertisement of at
// most batchSize multihashes is all or nothing; a longer one may be left
// partly indexed by a failure, and applying it again completes it.
// Multihashes that do not parse are skipped.
func (i *Ingester) putEntries(ctx context.Context, src Syncer, ad Ad) (int, error) {
	x := ad.Ad
	v := store.Value{ProviderID: ad.Provider, ContextID: x.ContextID, Metadata: x.Metadata}
	batch := make([]multihash.Multihash, 0, min(i.cfg.batchSize, 16_384))
	put := func() error {
		if err := i.st.Put(ctx, v, batch...); err != nil {
			return err
		}
		batch = batch[:0]
		return nil
	}
	n, bad, chunks := 0, 0, 0
	for c := x.Entries; c.Defined(); {
		if chunks >= i.cfg.entriesDepth {
			return n, fmt.Errorf("%w: entry chain of %s longer than %d chunks", ErrDepthLimit, ad.Cid, i.cfg.entriesDepth)
		}
		block, err := src.Block(ctx, c)
		if err != nil {
			return n, err
		}
		ch, err := schema.DecodeEntryChunk(c, block)
		if err != nil {
			if chunks == 0 && isHAMT(c, block) {
				return n, fmt.Errorf("%w: HAMT at %s", ErrUnsupportedEntries, c)
			}
			return n, fmt.Errorf("%w: %w", ErrInvalidBlock, err)
		}
		chunks++
		for _, mh := range ch.Entries {
			if store.ValidateMultihash(mh) != nil {
				bad++
				continue
			}
			batch = append(batch, mh)
			if len(batch) == i.cfg.batchSize {
				if err := put(); err != nil {
					return n, err
				}
			}
			n++
		}
		c = ch.Next
	}
	if len(batch) > 0 {
		if err := put(); err != nil {
			return n, err
		}
	}
	if bad > 0 {
		i.log.Warn("skipped malformed multihashes", "provider", ad.Provider.String(), "cid", ad.Cid.String(), "count", bad)
	}
	return n, nil
}

// isHAMT reports whether block, which did not decode as an entry chunk,
// is the root of an IPLD HAMT (a dag-cbor map with hamt, hashAlg and
// bucketSize), the other form IPNI entries may take.
func isHAMT(c cid.Cid, block []byte) bool {
	if c.Prefix().Codec != schema.DagCBOR {
		return false
	}
	nb := basicnode.Prototype.Any.NewBuilder()
	if err := dagcbor.Decode(nb, bytes.NewReader(block)); err != nil {
		return false
	}
	n := nb.Build()
	for _, k := range []string{"hamt", "hashAlg", "bucketSize"} {
		if _, err := n.LookupByString(k); err != nil {
			return false
		}
	}
	return true
}
