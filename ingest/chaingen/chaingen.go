package chaingen

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/indexkit/indexkit/ingest/schema"
)

// DefaultChunkSize is the number of multihashes per entry chunk when
// [Config.ChunkSize] is 0, as the reference publishers use.
const DefaultChunkSize = 1000

// Config says what chain [Generate] builds. The zero value is a valid,
// empty chain. Every "Every" field counts advertisements from 1 (the
// genesis ad is number 1): with RemoveEvery 5, ads 5, 10, 15, ... are
// removals. When two of them pick the same ad, the first in the order
// RemoveEvery, UpdateEvery, ReuseEvery wins; ExtendedEvery combines with
// any of them except a removal.
type Config struct {
	// Seed is the source of everything: keys, addresses, context IDs,
	// multihashes, metadata and every choice. Same Config, same chain,
	// byte for byte.
	Seed uint64
	// Ads is the number of advertisements.
	Ads int
	// MhsPerAd is the number of multihashes of each ad with entries. With
	// 0 those ads link to [schema.NoEntries] instead, which gives cheap,
	// arbitrarily deep chains that index nothing.
	MhsPerAd int
	// MinMhsPerAd, when positive, makes the number of multihashes of each
	// ad with entries vary from MinMhsPerAd to MhsPerAd inclusive, drawn
	// from the seed and the ad's number rather than from the stream of
	// choices, so that every other choice stays as it is (small ads of one
	// context each, as Boost and Curio publish: MinMhsPerAd 1, MhsPerAd
	// 16). 0: every such ad has exactly MhsPerAd. At most MhsPerAd, and at
	// least SharedMhs.
	MinMhsPerAd int
	// ChunkSize is the number of multihashes per EntryChunk (default
	// [DefaultChunkSize], at most [schema.MaxChunkEntries]). Chunks of more
	// than about 80,000 sha2-256 multihashes (dag-json) exceed
	// [schema.MaxBlockSize]: that is how a test gets an oversize block.
	ChunkSize int
	// Codec is the codec of every block: [schema.DagJSON] (the default)
	// or [schema.DagCBOR].
	Codec uint64

	// RemoveEvery makes every Nth ad an IsRm of an earlier context that
	// still has multihashes, picked at random (0 = never). With no such
	// context the ad is an ordinary one.
	RemoveEvery int
	// UpdateEvery makes every Nth ad a metadata-only update (NoEntries,
	// !IsRm) of an earlier context that still has multihashes, with new
	// metadata (0 = never). With no such context the ad is an ordinary one.
	UpdateEvery int
	// ReuseEvery makes every Nth ad with entries publish new multihashes
	// under an earlier context, live or removed, with new metadata
	// (0 = never): the metadata of the whole context is replaced, and a
	// removed context comes back holding only the new multihashes.
	ReuseEvery int
	// NoEntriesEvery is an alias of UpdateEvery, kept for callers that
	// name the ad by its Entries link. If both are set, UpdateEvery wins.
	NoEntriesEvery int
	// ExtendedEvery gives every Nth ad that is not a removal an
	// ExtendedProvider (the provider itself and one or two extended
	// providers whose keys derive from Seed), signed with
	// [schema.Advertisement.SignWithExtendedProviders] (0 = never).
	ExtendedEvery int
	// SharedMhs is the number of multihashes of each ad with entries that
	// repeat the first new multihashes of the previous ad with entries (at
	// most MhsPerAd), so that some multihashes have values in several
	// contexts. 0 = every multihash is new.
	SharedMhs int

	// PublisherSigns makes a separate publisher key sign every ad for the
	// provider; otherwise the provider key signs. Extended-provider
	// entries are signed by their own keys (the provider's own entry by
	// the provider key) either way.
	PublisherSigns bool

	// PieceContextEvery makes every Nth ad that would start a new context
	// carry its Filecoin piece in its ContextID instead of its metadata,
	// as Curio does (0 = never): the ContextID is the dag-cbor list
	// [pieceSize, pieceCID] (see [PieceContextID]) and the metadata is
	// bitswap + filecoin-piece-http, with no graphsync. Off, the chain is
	// byte for byte what it was before this field existed.
	PieceContextEvery int
}

func (cfg Config) normalize() (Config, error) {
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	if cfg.Codec == 0 {
		cfg.Codec = schema.DagJSON
	}
	if cfg.UpdateEvery == 0 {
		cfg.UpdateEvery = cfg.NoEntriesEvery
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Ads", cfg.Ads}, {"MhsPerAd", cfg.MhsPerAd}, {"MinMhsPerAd", cfg.MinMhsPerAd}, {"RemoveEvery", cfg.RemoveEvery},
		{"UpdateEvery", cfg.UpdateEvery}, {"NoEntriesEvery", cfg.NoEntriesEvery},
		{"ReuseEvery", cfg.ReuseEvery}, {"ExtendedEvery", cfg.ExtendedEvery}, {"SharedMhs", cfg.SharedMhs},
		{"PieceContextEvery", cfg.PieceContextEvery},
	} {
		if f.v < 0 {
			return cfg, fmt.Errorf("%w: %s is %d, must not be negative", ErrInvalidConfig, f.name, f.v)
		}
	}
	switch {
	case cfg.ChunkSize < 0 || cfg.ChunkSize > schema.MaxChunkEntries:
		return cfg, fmt.Errorf("%w: ChunkSize is %d, want 1 to %d", ErrInvalidConfig, cfg.ChunkSize, schema.MaxChunkEntries)
	case cfg.Codec != schema.DagJSON && cfg.Codec != schema.DagCBOR:
		return cfg, fmt.Errorf("%w: Codec is 0x%x, want dag-json 0x129 or dag-cbor 0x71", ErrInvalidConfig, cfg.Codec)
	case cfg.SharedMhs > cfg.MhsPerAd:
		return cfg, fmt.Errorf("%w: SharedMhs %d exceeds MhsPerAd %d", ErrInvalidConfig, cfg.SharedMhs, cfg.MhsPerAd)
	case cfg.MinMhsPerAd > cfg.MhsPerAd:
		return cfg, fmt.Errorf("%w: MinMhsPerAd %d exceeds MhsPerAd %d", ErrInvalidConfig, cfg.MinMhsPerAd, cfg.MhsPerAd)
	case cfg.MinMhsPerAd > 0 && cfg.SharedMhs > cfg.MinMhsPerAd:
		return cfg, fmt.Errorf("%w: SharedMhs %d exceeds MinMhsPerAd %d", ErrInvalidConfig, cfg.SharedMhs, cfg.MinMhsPerAd)
	}
	return cfg, nil
}

// Chain is a generated advertisement chain: its blocks, its keys and the
// log it derives its ground-truth [Model] from.
//
// Block, Head, Source, Blocks, Model, ModelAt, Ad, Corrupt, SetBlock and
// RemoveBlock are safe for concurrent use, also while Extend runs (a
// walker may fetch while a test extends the chain). The exported fields
// are set by Generate; Extend appends to Ads under the chain's lock, so a
// test that reads Ads while another goroutine extends the chain must use
// [Chain.Head] or [Chain.Ad] instead.
type Chain struct {
	Provider     peer.ID
	ProviderKey  crypto.PrivKey
	Publisher    peer.ID        // Provider unless Config.PublisherSigns
	PublisherKey crypto.PrivKey // ProviderKey unless Config.PublisherSigns
	Addrs        []string       // provider addresses in every ad
	Extended     []peer.ID      // extended providers that ads may list, besides Provider
	Ads          []cid.Cid      // oldest first

	cfg      Config
	addrs    []string // private copy of Addrs
	extKeys  map[string]crypto.PrivKey
	extAddrs [][]string
	extMeta  []byte // metadata of the extended providers' entries

	mu     sync.RWMutex // guards blocks, head, Ads, ops
	blocks map[cid.Cid][]byte
	head   cid.Cid
	ops    []op // one per ad, the model's log

	genMu    sync.Mutex        // serializes Extend; guards the generator state below
	sched    schedule          // which context each ad touches, and how
	ctxIDs   [][]byte          // every context ever made, by index
	ctxPiece map[int32]cid.Cid // the piece in a context's ID (PieceContextEvery)
	nextOrd  uint64            // ordinal of the next new multihash
	prevNew  span              // new multihashes of the latest ad with entries
}

// span is the multihashes of ordinals [start, start+n).
type span struct{ start, n uint64 }

type opKind uint8

const (
	opPut    opKind = iota // index the spans under ctx, set its metadata
	opUpdate               // set the metadata of ctx if it holds multihashes
	opRemove               // drop ctx
)

// op is what one ad does to the model.
type op struct {
	kind  opKind
	ctx   int32  // context index
	ctxID []byte // its ContextID
	meta  []byte
	spans []span
	piece cid.Cid // the piece of an opPut, Undef when it names none
}

// Generate builds the chain cfg describes. It fails only for an invalid
// cfg (errors wrap [ErrInvalidConfig]) or a bug.
func Generate(cfg Config) (*Chain, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, fmt.Errorf("chaingen: generate: %w", err)
	}
	c := &Chain{
		cfg:     cfg,
		blocks:  make(map[cid.Cid][]byte),
		extKeys: make(map[string]crypto.PrivKey),
		sched:   newSchedule(cfg.Seed),
	}
	if c.ProviderKey, c.Provider, err = c.key("provider", 0); err != nil {
		return nil, err
	}
	c.PublisherKey, c.Publisher = c.ProviderKey, c.Provider
	if cfg.PublisherSigns {
		if c.PublisherKey, c.Publisher, err = c.key("publisher", 0); err != nil {
			return nil, err
		}
	}
	port := 10000 + cfg.Seed%40000
	c.addrs = []string{
		"/ip4/127.0.0.1/tcp/" + strconv.FormatUint(port, 10) + "/http",
		"/ip4/127.0.0.1/udp/" + strconv.FormatUint(port, 10) + "/quic-v1",
	}
	c.Addrs = append([]string(nil), c.addrs...)
	for i := range 2 {
		k, id, err := c.key("extended", uint64(i))
		if err != nil {
			return nil, err
		}
		c.extKeys[id.String()] = k
		c.Extended = append(c.Extended, id)
		c.extAddrs = append(c.extAddrs, []string{
			"/dns4/ep" + strconv.Itoa(i) + ".example.net/tcp/443/https",
		})
	}
	m, err := metadata.New(metadata.IPFSGatewayHTTP{})
	if err != nil {
		return nil, fmt.Errorf("chaingen: generate: %w", err)
	}
	c.extMeta = m.Encode()
	if err := c.extend(cfg.Ads); err != nil {
		return nil, err
	}
	return c, nil
}

// Extend appends n ads on top of the chain, as if the publisher had
// announced a new head: earlier CIDs and blocks stay as they are. It is
// deterministic: Generate with Ads a, then Extend(b), gives the same chain
// as Generate with Ads a+b. Blocks of the new ads are in place before
// [Chain.Head] moves, ad by ad.
func (c *Chain) Extend(n int) error {
	if n < 0 {
		return fmt.Errorf("chaingen: extend: %w: n is %d", ErrInvalidConfig, n)
	}
	return c.extend(n)
}

func (c *Chain) extend(n int) error {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	for range n {
		if err := c.nextAd(); err != nil {
			return err
		}
	}
	return nil
}

// every reports whether the ad numbered n (from 1) is an every-th one.
func every(every, n int) bool { return every > 0 && n%every == 0 }

// block is one encoded block waiting to be published.
type block struct {
	id   cid.Cid
	data []byte
}

// nextAd generates one ad with its entries, publishes its blocks and moves
// the head. Called with genMu held.
func (c *Chain) nextAd() error {
	cfg := &c.cfg
	n := len(c.ops) + 1
	o := op{}
	var fresh bool
	o.kind, o.ctx, fresh = c.sched.choose(cfg, n)
	switch {
	case fresh && every(cfg.PieceContextEvery, n):
		c.newPieceContext(n)
	case fresh:
		c.newContext()
	}
	o.ctxID = c.ctxIDs[o.ctx]

	var err error
	switch {
	case o.kind == opPut && c.ctxPiece[o.ctx].Defined():
		o.piece = c.ctxPiece[o.ctx]
		o.meta, err = pieceContextMetadata()
	case o.kind == opPut:
		o.meta, err = c.entriesMetadata(n)
		if n%4 != 0 {
			o.piece = c.pieceCID(n)
		}
	case o.kind == opUpdate:
		o.meta, err = c.updateMetadata(n)
	}
	if err != nil {
		return fmt.Errorf("chaingen: ad %d: metadata: %w", n, err)
	}

	entries, blocks := schema.NoEntries, []block(nil)
	if o.kind == opPut {
		shared := min(uint64(cfg.SharedMhs), c.prevNew.n)
		if shared > 0 {
			o.spans = append(o.spans, span{c.prevNew.start, shared})
		}
		fresh := span{c.nextOrd, uint64(c.mhsOf(n)) - shared}
		c.nextOrd += fresh.n
		if fresh.n > 0 {
			o.spans = append(o.spans, fresh)
		}
		c.prevNew = fresh
		if entries, blocks, err = c.entryChunks(o.spans); err != nil {
			return fmt.Errorf("chaingen: ad %d: %w", n, err)
		}
	}

	ad := &schema.Advertisement{
		PreviousID: c.head, // written only by this goroutine
		Provider:   c.Provider.String(),
		Addresses:  c.addrs,
		Entries:    entries,
		ContextID:  o.ctxID,
		Metadata:   o.meta,
		IsRm:       o.kind == opRemove,
	}
	if every(cfg.ExtendedEvery, n) && !ad.IsRm {
		ad.ExtendedProvider = c.extendedProvider(n, o.meta)
	}
	if err := c.sign(ad); err != nil {
		return fmt.Errorf("chaingen: ad %d: %w", n, err)
	}
	data, id, err := ad.EncodeAs(cfg.Codec)
	if err != nil {
		return fmt.Errorf("chaingen: ad %d: %w", n, err)
	}

	c.sched.apply(o.kind, o.ctx)

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range blocks {
		c.blocks[b.id] = b.data
	}
	c.blocks[id] = data
	c.head = id
	c.Ads = append(c.Ads, id)
	c.ops = append(c.ops, o)
	return nil
}
