package chaingen

// OnDemand: a chain of ordinary ads whose blocks are made again from the
// seed when asked for, for chains too large to hold.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/schema"
)

// OnDemand is the chain [Generate] makes of a [Config] of ordinary ads
// only (each ad a new context with its own new multihashes), byte for
// byte and CID for CID, that holds none of its blocks: [OnDemand.Block]
// encodes (and signs) the block asked for again from the seed. It keeps 32
// bytes of digest per block, 4 of index and 12 per ad: 48 bytes per ad
// and 36 per entry chunk, whatever their sizes. A chain of 25 million
// multihashes in ads of 10,000 (chunks of 1,000) takes about 1 MB, where
// a [Chain] holds about a gigabyte of blocks; one of a million ads of one
// chunk each, 84 MB.
//
// There is no [Model]: an OnDemand chain is for benchmarks, whose ground
// truth is simply every multihash of [OnDemand.Multihash] under the
// context of its ad. It cannot be extended or tampered with. It is
// immutable and safe for concurrent use.
type OnDemand struct {
	Provider     peer.ID
	ProviderKey  crypto.PrivKey
	Publisher    peer.ID        // Provider unless Config.PublisherSigns
	PublisherKey crypto.PrivKey // ProviderKey unless Config.PublisherSigns
	Addrs        []string       // provider addresses in every ad

	c       *Chain     // keys, addresses and the encoders; no blocks
	digests [][32]byte // sha2-256 of ad i at i, of chunk k at ads+k
	sorted  []uint32   // block numbers, by digest
	start   []uint64   // first ordinal of ad i; start[ads] is the total
	chunk0  []uint32   // number of the first chunk of ad i; chunk0[ads] is the chunk count
}

// NewOnDemand generates the chain cfg describes once, keeping the digest
// of each block. cfg may set Seed, Ads, MhsPerAd (positive),
// MinMhsPerAd, ChunkSize, Codec and PublisherSigns; any other field gives
// an error wrapping [ErrInvalidConfig], as does a cfg [Generate] refuses.
// It takes about as long as Generate; when ctx ends it stops and returns
// ctx's error.
func NewOnDemand(ctx context.Context, cfg Config) (*OnDemand, error) {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"RemoveEvery", cfg.RemoveEvery}, {"UpdateEvery", cfg.UpdateEvery}, {"NoEntriesEvery", cfg.NoEntriesEvery},
		{"ReuseEvery", cfg.ReuseEvery}, {"ExtendedEvery", cfg.ExtendedEvery}, {"SharedMhs", cfg.SharedMhs},
		{"PieceContextEvery", cfg.PieceContextEvery},
	} {
		if f.v != 0 {
			return nil, fmt.Errorf("chaingen: on demand: %w: %s is %d; only ordinary ads are made on demand", ErrInvalidConfig, f.name, f.v)
		}
	}
	if cfg.MhsPerAd <= 0 {
		return nil, fmt.Errorf("chaingen: on demand: %w: MhsPerAd is %d, must be positive", ErrInvalidConfig, cfg.MhsPerAd)
	}
	if _, err := cfg.normalize(); err != nil {
		return nil, fmt.Errorf("chaingen: on demand: %w", err)
	}
	ads := cfg.Ads
	cfg.Ads = 0
	c, err := Generate(cfg) // keys and addresses; no ad
	if err != nil {
		return nil, fmt.Errorf("chaingen: on demand: %w", err)
	}
	c.cfg.Ads = ads
	o := &OnDemand{
		Provider: c.Provider, ProviderKey: c.ProviderKey,
		Publisher: c.Publisher, PublisherKey: c.PublisherKey,
		Addrs:  append([]string(nil), c.addrs...),
		c:      c,
		start:  make([]uint64, ads+1),
		chunk0: make([]uint32, ads+1),
	}
	size := uint64(c.cfg.ChunkSize)
	var ord uint64
	var chunks uint32
	for i := range ads {
		o.start[i], o.chunk0[i] = ord, chunks
		ord += uint64(c.mhsOf(i + 1))
		chunks += uint32((ord - o.start[i] + size - 1) / size)
	}
	o.start[ads], o.chunk0[ads] = ord, chunks
	o.digests = make([][32]byte, ads+int(chunks))

	prev := cid.Undef
	for i := range ads {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("chaingen: on demand: %w", err)
		}
		entries, blocks, err := c.entryChunks([]span{{o.start[i], o.start[i+1] - o.start[i]}})
		if err != nil {
			return nil, fmt.Errorf("chaingen: on demand: ad %d: %w", i+1, err)
		}
		// entryChunks returns the chunks last first.
		for j, b := range blocks {
			o.digests[ads+int(o.chunk0[i])+len(blocks)-1-j] = digestOf(b.id)
		}
		_, id, err := o.ad(i, prev, entries)
		if err != nil {
			return nil, err
		}
		o.digests[i] = digestOf(id)
		prev = id
	}
	o.sorted = make([]uint32, len(o.digests))
	for i := range o.sorted {
		o.sorted[i] = uint32(i)
	}
	slices.SortFunc(o.sorted, func(a, b uint32) int { return bytes.Compare(o.digests[a][:], o.digests[b][:]) })
	return o, nil
}

// digestOf is the sha2-256 digest of a CID the encoders made.
func digestOf(id cid.Cid) [32]byte {
	var d [32]byte
	h := id.Hash()
	copy(d[:], h[len(h)-sha256.Size:])
	return d
}

// cidOf is the CID of block number b.
func (o *OnDemand) cidOf(b int) cid.Cid {
	mh, _ := multihash.Encode(o.digests[b][:], multihash.SHA2_256) // cannot fail
	return cid.NewCidV1(o.c.cfg.Codec, mh)
}

// ad encodes and signs ad i (from 0) over the ad before it and its first
// entry chunk, as [Chain] makes an ordinary ad.
func (o *OnDemand) ad(i int, prev, entries cid.Cid) ([]byte, cid.Cid, error) {
	n := i + 1
	meta, err := o.c.entriesMetadata(n)
	if err != nil {
		return nil, cid.Undef, fmt.Errorf("chaingen: on demand: ad %d: metadata: %w", n, err)
	}
	ad := &schema.Advertisement{
		PreviousID: prev,
		Provider:   o.c.Provider.String(),
		Addresses:  o.c.addrs,
		Entries:    entries,
		ContextID:  o.c.contextID(i),
		Metadata:   meta,
	}
	if err := o.c.sign(ad); err != nil {
		return nil, cid.Undef, fmt.Errorf("chaingen: on demand: ad %d: %w", n, err)
	}
	data, id, err := ad.EncodeAs(o.c.cfg.Codec)
	if err != nil {
		return nil, cid.Undef, fmt.Errorf("chaingen: on demand: ad %d: %w", n, err)
	}
	return data, id, nil
}

// Head returns the CID of the newest ad, cid.Undef for a chain of no ads.
func (o *OnDemand) Head() cid.Cid {
	if o.Len() == 0 {
		return cid.Undef
	}
	return o.cidOf(o.Len() - 1)
}

// Len returns the number of ads.
func (o *OnDemand) Len() int { return len(o.start) - 1 }

// Blocks returns the number of blocks: ads and entry chunks.
func (o *OnDemand) Blocks() int { return len(o.digests) }

// Ad returns the CID of the i-th ad, oldest first (0 is the genesis ad).
// It panics if i is out of range, as an index does.
func (o *OnDemand) Ad(i int) cid.Cid {
	if i < 0 || i >= o.Len() {
		panic(fmt.Sprintf("chaingen: on demand: ad %d of %d", i, o.Len()))
	}
	return o.cidOf(i)
}

// Multihashes returns the number of multihashes of the chain; each is
// advertised once.
func (o *OnDemand) Multihashes() uint64 { return o.start[o.Len()] }

// Multihash returns the multihash of the given ordinal, 0 to
// Multihashes()-1: they are advertised in order, the first ones by the
// genesis ad. Any ordinal gives the multihash a longer chain of the same
// seed would have there.
func (o *OnDemand) Multihash(ordinal uint64) multihash.Multihash {
	return AppendMultihash(make([]byte, 0, 2+sha256.Size), o.c.cfg.Seed, ordinal)
}

// AppendMultihash appends to dst the multihash of the given ordinal of
// every chain of the seed (a sha2-256 multihash, 34 bytes) and returns
// the extended slice: the multihash [OnDemand.Multihash] gives, and the
// one a [Chain] of that seed advertises as its ordinal-th new multihash.
// It lets a benchmark name the multihashes of a chain without the chain.
func AppendMultihash(dst []byte, seed, ordinal uint64) []byte {
	return appendMultihash(dst, seed, ordinal)
}

// AdOf returns the number (from 0) of the ad that advertises the
// multihash of the given ordinal, -1 if the chain has no such multihash.
func (o *OnDemand) AdOf(ordinal uint64) int {
	if ordinal >= o.Multihashes() {
		return -1
	}
	return sort.Search(o.Len(), func(i int) bool { return o.start[i+1] > ordinal })
}

// Block encodes the block stored under id again. For a CID that is not
// one of the chain's it returns an error wrapping [ErrNotFound]; for a
// done ctx, ctx's error.
func (o *OnDemand) Block(ctx context.Context, id cid.Cid) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, ok := o.find(id)
	if !ok {
		return nil, fmt.Errorf("chaingen: block %s: %w", id, ErrNotFound)
	}
	ads := o.Len()
	if b < ads {
		prev := cid.Undef
		if b > 0 {
			prev = o.cidOf(b - 1)
		}
		data, _, err := o.ad(b, prev, o.cidOf(ads+int(o.chunk0[b])))
		return data, err
	}
	k := uint32(b - ads)
	i := sort.Search(ads, func(i int) bool { return o.chunk0[i+1] > k }) // the ad of chunk k
	size := uint64(o.c.cfg.ChunkSize)
	first := o.start[i] + uint64(k-o.chunk0[i])*size
	end := min(first+size, o.start[i+1])
	const mhLen = 2 + sha256.Size
	buf := make([]byte, 0, (end-first)*mhLen)
	mhs := make([]multihash.Multihash, 0, end-first)
	for ord := first; ord < end; ord++ {
		at := len(buf)
		buf = appendMultihash(buf, o.c.cfg.Seed, ord)
		mhs = append(mhs, buf[at:len(buf):len(buf)])
	}
	next := cid.Undef
	if k+1 < o.chunk0[i+1] {
		next = o.cidOf(b + 1)
	}
	data, _, err := (&schema.EntryChunk{Entries: mhs, Next: next}).EncodeAs(o.c.cfg.Codec)
	if err != nil {
		return nil, fmt.Errorf("chaingen: on demand: chunk %d of ad %d: %w", k-o.chunk0[i], i+1, err)
	}
	return data, nil
}

// find returns the number of the block under id.
func (o *OnDemand) find(id cid.Cid) (int, bool) {
	if !id.Defined() || id.Version() != 1 || id.Type() != o.c.cfg.Codec {
		return 0, false
	}
	dm, err := multihash.Decode(id.Hash())
	if err != nil || dm.Code != multihash.SHA2_256 || len(dm.Digest) != sha256.Size {
		return 0, false
	}
	j := sort.Search(len(o.sorted), func(j int) bool { return bytes.Compare(o.digests[o.sorted[j]][:], dm.Digest) >= 0 })
	if j == len(o.sorted) || !bytes.Equal(o.digests[o.sorted[j]][:], dm.Digest) {
		return 0, false
	}
	return int(o.sorted[j]), true
}

// Source adapts the chain to the shape of a sync client or a publisher's
// block source, as [Chain.Source] does.
func (o *OnDemand) Source() *Source { return &Source{c: o} }
