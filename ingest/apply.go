package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ipfs/go-cid"
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

// Flush writes the provider records whose LastAdvertisement lags, then
// flushes the store.
func (a storeApplier) Flush(ctx context.Context) error {
	if err := a.i.flushProviders(ctx); err != nil {
		return err
	}
	return a.i.st.Flush(ctx)
}

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
	case !x.HasEntries() || ad.Frozen && len(x.ContextID) > 0:
		// Metadata only (or frozen: no entries are fetched or stored). A context not stored has no multihashes for
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

	return a.i.deferProvider(ctx, ad.Provider, func(info *store.ProviderInfo) {
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

// putEntries fetches the entries of ad, an entry chain or a HAMT, and puts
// their multihashes into the store, batchSize at a time. Each block (entry
// chunk or HAMT node) is fetched and verified in full before any of its
// multihashes is put, so an advertisement of at most batchSize multihashes
// is all or nothing; a longer one may be left partly indexed by a failure,
// and applying it again completes it. Multihashes that do not parse are
// skipped.
func (i *Ingester) putEntries(ctx context.Context, src Syncer, ad Ad) (int, error) {
	x := ad.Ad
	b := i.getBatch()
	sink := &entrySink{
		ctx:   ctx,
		st:    i.st,
		v:     store.Value{ProviderID: ad.Provider, ContextID: x.ContextID, Metadata: x.Metadata},
		size:  i.cfg.batchSize,
		batch: b,
	}
	err := i.walkEntries(ctx, src, ad, 0, sink.add, &b.dec)
	if err == nil {
		err = sink.flush()
	}
	i.putBatch(b)
	if sink.bad > 0 {
		i.log.Warn("skipped malformed multihashes", "provider", ad.Provider.String(), "cid", ad.Cid.String(), "count", sink.bad)
	}
	return sink.n, err
}

// freeBatches is the most batches an Ingester keeps for reuse: at the
// default batch size, 4 × 65,536 × 24 bytes, 6 MiB, held (empty) after a
// walk, against a batch grown and dropped per large advertisement, and the
// multihashes' bytes of the largest advertisements walked (some 350 KiB
// for 10,000 multihashes, 2.3 MiB for a full batch).
const freeBatches = 4

// batch is what one walk of an advertisement's entries puts into the
// store and the memory it reuses: the multihashes of the next Put (mhs),
// their bytes (keys: the blocks they were decoded from go back to the
// Syncer once indexed, see [Syncer]) and the decoder of its entry chunks.
type batch struct {
	mhs  []multihash.Multihash
	keys []byte
	dec  schema.EntryDecoder
}

// getBatch returns an empty batch for an entrySink: a free one, or a new
// one with room for batchSize multihashes (or 16,384, if that is smaller:
// a larger batch grows as it fills). Reusing batches spares a large
// advertisement the growing of its batch, which copies pointers under the
// garbage collector's write barrier, and every advertisement the
// allocation of its multihashes' bytes and of its chunks' decoding.
func (i *Ingester) getBatch() *batch {
	select {
	case b := <-i.batches:
		return b
	default:
		return &batch{mhs: make([]multihash.Multihash, 0, min(i.cfg.batchSize, 16_384))}
	}
}

// putBatch keeps b for reuse, if there is room, holding no multihash: a
// free batch must not keep the blocks its multihashes point into alive.
func (i *Ingester) putBatch(b *batch) {
	b.reset()
	b.dec.Reset()
	select {
	case i.batches <- b:
	default:
	}
}

// reset empties b for its next Put.
func (b *batch) reset() {
	clear(b.mhs)
	b.mhs, b.keys = b.mhs[:0], b.keys[:0]
}

// add adds a copy of mh to b.
func (b *batch) add(mh multihash.Multihash) {
	if len(b.keys)+len(mh) > cap(b.keys) {
		// A new array: the batch's earlier multihashes keep the old one
		// until the Put, and the next batch reuses this one.
		b.keys = make([]byte, 0, max(2*cap(b.keys), 64<<10, len(mh)))
	}
	start := len(b.keys)
	b.keys = append(b.keys, mh...)
	b.mhs = append(b.mhs, b.keys[start:len(b.keys):len(b.keys)])
}

// Entries calls yield with every multihash of ad's entries, in order: those
// of its entry chain or, when the first block is the root of a HAMT, the keys
// of the HAMT. Each block is fetched through src and verified (hash, size,
// codec, format) before any multihash of it is yielded; the entries depth
// limit applies. Multihashes are yielded as the block holds them, without
// validation. It is meant for an [Applier] installed with [WithApplier]: src
// is the Syncer Apply was given. An error from yield ends the iteration and
// is returned as it is; fetch and format errors wrap the sentinels of this
// package as for the Ingester's own applier ([ErrFetch], [ErrInvalidBlock],
// [ErrUnsupportedEntries], [ErrDepthLimit]). An ad without entries yields
// nothing.
func (i *Ingester) Entries(ctx context.Context, src Syncer, ad Ad, yield func(multihash.Multihash) error) error {
	if ad.Ad == nil || !ad.Ad.HasEntries() {
		return nil
	}
	return i.walkEntries(ctx, src, ad, 0, yieldEach(yield), nil)
}

// FirstEntries is [Ingester.Entries] over the first blocks blocks of ad's
// entries only: the first entry chunks of its chain or, for a HAMT, its
// root and the nodes after it in depth-first order. The blocks after them
// are not fetched. A sampler that needs some of an advertisement's
// multihashes, not all, reads one block per advertisement this way
// instead of the whole chain of chunks. blocks < 1 reads them all, as
// Entries does.
func (i *Ingester) FirstEntries(ctx context.Context, src Syncer, ad Ad, blocks int, yield func(multihash.Multihash) error) error {
	if ad.Ad == nil || !ad.Ad.HasEntries() {
		return nil
	}
	return i.walkEntries(ctx, src, ad, max(blocks, 0), yieldEach(yield), nil)
}

// yieldEach adapts a function of one multihash to the blocks walkEntries
// passes on.
func yieldEach(yield func(multihash.Multihash) error) func([]multihash.Multihash) error {
	return func(mhs []multihash.Multihash) error {
		for _, mh := range mhs {
			if err := yield(mh); err != nil {
				return err
			}
		}
		return nil
	}
}

// walkEntries passes the multihashes of ad's entries to add, a block's
// worth at a time (a slice add must not keep: it is reused for the next
// block): those of the entry chain, or, when the first block is the root
// of a HAMT, those of the HAMT; of the first maxBlocks blocks only, when
// maxBlocks > 0. Entry chunks are hashed only if src does not verify
// blocks itself (see [Syncer]).
//
// With dec, add copies whatever it keeps of the multihashes it is passed:
// the entry chunks are decoded with dec, and each goes back to src (if it
// takes blocks back, see [Syncer]) once add has returned.
func (i *Ingester) walkEntries(ctx context.Context, src Syncer, ad Ad, maxBlocks int, add func([]multihash.Multihash) error, dec *schema.EntryDecoder) error {
	hashed := blocksVerified(src)
	var release func([]byte)
	if dec != nil {
		release = blockReleaser(src)
	}
	var mhs []multihash.Multihash
	chunks := 0
	for c := ad.Ad.Entries; c.Defined() && (maxBlocks == 0 || chunks < maxBlocks); {
		if chunks >= i.cfg.entriesDepth {
			return fmt.Errorf("%w: entry chain of %s longer than %d chunks", ErrDepthLimit, ad.Cid, i.cfg.entriesDepth)
		}
		block, err := src.Block(ctx, c)
		if err != nil {
			return err
		}
		var next cid.Cid
		var decodeErr error
		err = i.paced(ctx, func() error {
			if dec != nil {
				mhs, next, decodeErr = dec.Decode(c, block, hashed)
			} else {
				mhs, next, decodeErr = schema.AppendEntryChunk(mhs[:0], c, block, hashed)
			}
			if decodeErr != nil {
				return nil
			}
			return add(mhs)
		})
		if decodeErr != nil {
			if chunks == 0 && errors.Is(decodeErr, schema.ErrMalformed) {
				return i.otherEntries(ctx, src, ad, c, block, decodeErr, maxBlocks, add)
			}
			return fmt.Errorf("%w: %w", ErrInvalidBlock, decodeErr)
		}
		if err != nil {
			return err
		}
		if release != nil {
			release(block)
		}
		chunks++
		c = next
	}
	return nil
}

// paced runs fn, a piece of CPU work, through the pacer if there is one.
func (i *Ingester) paced(ctx context.Context, fn func() error) error {
	if i.cfg.pacer == nil {
		return fn()
	}
	return i.cfg.pacer.Run(ctx, fn)
}

// otherEntries handles a first Entries block (fetched under c) that did
// not decode as an entry chunk (chunkErr): it walks it if it is the root of
// a HAMT, and fails otherwise.
func (i *Ingester) otherEntries(ctx context.Context, src Syncer, ad Ad, c cid.Cid, block []byte, chunkErr error, maxBlocks int, add func([]multihash.Multihash) error) error {
	decodes, hamt, chunk := entriesKind(c, block)
	switch {
	case hamt:
		r, err := decodeHAMTRoot(c, block)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidBlock, err)
		}
		return i.putHAMT(ctx, src, ad, r, maxBlocks, add)
	case !decodes || chunk:
		return fmt.Errorf("%w: %w", ErrInvalidBlock, chunkErr)
	default:
		return fmt.Errorf("%w: %s is neither an entry chunk nor a HAMT root", ErrUnsupportedEntries, c)
	}
}

// entrySink batches the multihashes of one advertisement into store Puts.
// It copies them (into its batch's keys): the walk reuses the blocks and
// the decoder's memory they come from.
type entrySink struct {
	ctx   context.Context
	st    store.Store
	v     store.Value
	size  int // the batch size
	batch *batch
	n     int // multihashes added
	bad   int // multihashes skipped
}

// add adds the multihashes of one block, skipping those that are
// malformed, and puts the batch whenever it is full.
func (s *entrySink) add(mhs []multihash.Multihash) error {
	for _, mh := range mhs {
		if store.ValidateMultihash(mh) != nil {
			s.bad++
			continue
		}
		s.batch.add(mh)
		s.n++
		if len(s.batch.mhs) == s.size {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush puts the batch, if any, and empties it.
func (s *entrySink) flush() error {
	if len(s.batch.mhs) == 0 {
		return nil
	}
	if err := s.st.Put(s.ctx, s.v, s.batch.mhs...); err != nil {
		return err
	}
	s.batch.reset()
	return nil
}
