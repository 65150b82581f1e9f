package publishernode

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/internal/localonly"
)

// Fault is a way a publisher misbehaves. Each makes every ad the
// publisher serves unusable to an indexer that checks what IPNI asks it to
// check, so that nothing of the publisher may be indexed; the head
// announcements and the signed head stay valid, so the fault is met only
// when the chain is walked.
type Fault string

const (
	// Honest is no fault: the publisher serves its generated chain.
	Honest Fault = ""
	// BadSignature serves every ad with a signature that does not verify:
	// each ad is signed by the publisher's key and then altered (an
	// address appended) so that the signed payload no longer matches.
	// CIDs and links are consistent, so only the signature check can
	// catch it (ingest: ErrSignature).
	BadSignature Fault = "bad-signature"
	// CorruptBlocks serves every entry chunk with one bit flipped, so that
	// its bytes do not hash to its CID. Ads are intact and correctly
	// signed. The ipnisync client checks the hash as it reads the block,
	// so the ingester fails with ErrFetch wrapping ipnisync.ErrHashMismatch
	// (a client that does not check would meet schema.ErrHashMismatch).
	CorruptBlocks Fault = "corrupt"
	// HugeChunks makes every ad's entries one chunk of [HugeChunkEntries]
	// multihashes, a block over schema.MaxBlockSize (4 MiB) that a client
	// refuses to read past the limit (ingest: ErrFetch, wrapping
	// ipnisync.ErrBlockTooLarge). It costs about 7 MB of memory and a
	// fraction of a second of CPU per ad: bound it with -max-ads.
	HugeChunks Fault = "huge"
)

// HugeChunkEntries is the number of multihashes of the one entry chunk of
// each ad of a [HugeChunks] publisher: about 6.5 MB of dag-json.
const HugeChunkEntries = 100_000

// UnmarshalText sets f from its name, for flags and config files.
func (f *Fault) UnmarshalText(b []byte) error {
	v := Fault(b)
	if err := v.validate(); err != nil {
		return err
	}
	*f = v
	return nil
}

// MarshalText returns the name of f.
func (f Fault) MarshalText() ([]byte, error) { return []byte(f), nil }

func (f Fault) validate() error {
	switch f {
	case Honest, BadSignature, CorruptBlocks, HugeChunks:
		return nil
	}
	return fmt.Errorf("%w %q: want bad-signature, corrupt or huge", ErrUnknownFault, string(f))
}

// PublisherSeed returns the chaingen seed of publisher index of a process
// started with seed: a hash of both, so that distinct (seed, index) pairs
// give distinct identities and multihashes.
func PublisherSeed(seed uint64, index int) uint64 {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], seed)
	binary.BigEndian.PutUint64(b[8:], uint64(index))
	h := sha256.Sum256(b[:])
	return binary.BigEndian.Uint64(h[:8])
}

// Spec says what one [Publisher] generates.
type Spec struct {
	// Seed derives its identity (an Ed25519 key; the publisher is its own
	// provider), its multihashes, context IDs, metadata and choices.
	Seed uint64
	// Ads is how many ads it has when created.
	Ads int
	// Entries is the number of multihashes of each ad with entries.
	Entries int
	// ChunkSize is the number of multihashes per entry chunk.
	ChunkSize int
	// RemoveEvery and UpdateEvery make every Nth ad a removal or a
	// metadata update of an earlier context (0: never).
	RemoveEvery, UpdateEvery int
	// PieceContextEvery makes every Nth ad that starts a new context name
	// its Filecoin piece in its ContextID, the dag-cbor list [size,
	// pieceCID] as Curio writes it, with bitswap and filecoin-piece-http
	// metadata (chaingen.Config.PieceContextEvery); 0: never, and the
	// chain is what it was before this field existed. Other ads with
	// entries name their piece in graphsync metadata (three in four), so
	// a piece sampler finds pieces either way; see [Publisher.Pieces].
	PieceContextEvery int
	// Fault, if any; HugeChunks overrides Entries and ChunkSize.
	Fault Fault
}

// chainConfig is the chaingen configuration of s with ads ads.
func (s Spec) chainConfig(ads int) chaingen.Config {
	cfg := chaingen.Config{
		Seed:        s.Seed,
		Ads:         ads,
		MhsPerAd:    s.Entries,
		ChunkSize:   s.ChunkSize,
		RemoveEvery: s.RemoveEvery,
		UpdateEvery: s.UpdateEvery,

		PieceContextEvery: s.PieceContextEvery,
	}
	if s.Fault == HugeChunks {
		cfg.MhsPerAd, cfg.ChunkSize = HugeChunkEntries, HugeChunkEntries
	}
	return cfg
}

// Publisher is one generated IPNI publisher: a deterministic, signed
// advertisement chain (ingest/chaingen) served over ipnisync HTTP, with
// its ground truth. It is an http.Handler: /ipni/v1/ad/head and
// /ipni/v1/ad/{cid} (the publisher protocol) and GET /truth (see
// [Publisher.Truth]). It is safe for concurrent use.
type Publisher struct {
	spec  Spec
	chain *chaingen.Chain
	sync  *ipnisync.Publisher
	mux   *http.ServeMux

	pubMu sync.Mutex // serializes Publish

	halted atomic.Bool // Halt was called: the runner publishes no more

	mu        sync.RWMutex
	published int                   // ads served (the head is the last)
	head      cid.Cid               // the served head
	mirror    map[cid.Cid][]byte    // BadSignature: the altered ads
	mirrorOf  []cid.Cid             // BadSignature: altered CID of ad i
	mhs       []multihash.Multihash // Honest: every multihash advertised, first seen first
	seen      map[string]int        // Honest: index in mhs of each multihash
}

// NewPublisher generates the first spec.Ads ads of the publisher's chain
// and serves them. Errors wrap ErrInvalidSpec.
func NewPublisher(spec Spec) (*Publisher, error) {
	switch {
	case spec.Ads < 0:
		return nil, fmt.Errorf("%w: Ads %d is negative", ErrInvalidSpec, spec.Ads)
	case spec.Entries < 1 && spec.Fault != HugeChunks:
		return nil, fmt.Errorf("%w: Entries %d: want at least 1", ErrInvalidSpec, spec.Entries)
	}
	if err := spec.Fault.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	chain, err := chaingen.Generate(spec.chainConfig(0))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	p := &Publisher{spec: spec, chain: chain, seen: make(map[string]int)}
	if spec.Fault == BadSignature {
		p.mirror = make(map[cid.Cid][]byte)
	}
	if p.sync, err = ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(p.block)); err != nil {
		return nil, err
	}
	p.mux = http.NewServeMux()
	p.mux.Handle(ipnisync.IPNIPath+"/", p.sync)
	p.mux.HandleFunc("GET /truth", p.serveTruth)
	local, err := localonly.New("the publisher's POST /halt", "halt it through 127.0.0.1")
	if err != nil {
		return nil, err
	}
	p.mux.Handle("POST /halt", local.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Halt()
		w.WriteHeader(http.StatusNoContent)
	})))
	if err := p.Publish(context.Background(), spec.Ads); err != nil {
		return nil, err
	}
	return p, nil
}

// Halt stops the runner from publishing more ads for p; p keeps serving
// what it has, so that its truth stops moving (a demo's final check).
// POST /halt on the publisher's server does the same, to a loopback Host
// and from no web page (internal/localonly): 421 or 403 otherwise. Publish itself is
// not affected.
func (p *Publisher) Halt() { p.halted.Store(true) }

// Halted reports whether Halt was called.
func (p *Publisher) Halted() bool { return p.halted.Load() }

// ID returns the publisher's peer ID, which is also the provider of every
// ad and the signer of its head.
func (p *Publisher) ID() peer.ID { return p.chain.Publisher }

// ProviderAddrs returns the provider addresses every ad of its chain
// carries: what an indexer that ingested it answers as its provider's
// Addrs (a BadSignature publisher's altered ads add one).
func (p *Publisher) ProviderAddrs() []string { return slices.Clone(p.chain.Addrs) }

// Fault returns the publisher's fault (Honest: none).
func (p *Publisher) Fault() Fault { return p.spec.Fault }

// Head returns the head it serves; cid.Undef before the first ad.
func (p *Publisher) Head() cid.Cid {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.head
}

// Ads returns the number of ads it serves.
func (p *Publisher) Ads() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.published
}

// Advertised returns what the publisher's ads advertise, as the [Truth]
// it would have if it were honest: for a faulty publisher, the
// multihashes (with their values) that a checking indexer must never
// answer, since every ad carrying them is unusable; for an honest one,
// its Truth. Head, Ads and Fault are the publisher's own. For a faulty
// publisher it regenerates the chain honestly (the same seed gives the
// same multihashes; a HugeChunks chain in chunks small enough to read,
// which changes its CIDs but not its multihashes and values), which costs
// about what publishing it did.
func (p *Publisher) Advertised(entries bool) (Truth, error) {
	p.pubMu.Lock()
	n := p.Ads()
	p.pubMu.Unlock()
	if p.spec.Fault == Honest {
		return p.Truth(entries), nil
	}
	spec := p.spec
	spec.Ads, spec.Fault = n, Honest
	if p.spec.Fault == HugeChunks {
		spec.Entries, spec.ChunkSize = HugeChunkEntries, HugeChunkEntries/10
	}
	h, err := NewPublisher(spec)
	if err != nil {
		return Truth{}, fmt.Errorf("publisher: regenerate the chain of a %s publisher: %w", p.spec.Fault, err)
	}
	t := h.Truth(entries)
	t.Publisher, t.Fault = p.ID().String(), p.spec.Fault
	if head := p.Head(); head.Defined() {
		t.Head = head.String()
	}
	return t, nil
}

// ServeHTTP serves the publisher protocol under /ipni/v1/ad/ and the ground
// truth at GET /truth.
func (p *Publisher) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// block is the publisher's block source: the chain's blocks, with the
// altered ads of a BadSignature publisher in front (the unaltered ones are
// linked from nothing it serves). A CorruptBlocks publisher corrupts its
// chunks in the chain itself.
func (p *Publisher) block(ctx context.Context, c cid.Cid) ([]byte, error) {
	if p.mirror != nil {
		p.mu.RLock()
		b, ok := p.mirror[c]
		p.mu.RUnlock()
		if ok {
			return b, nil
		}
	}
	b, err := p.chain.Block(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ipnisync.ErrNotFound, err)
	}
	return b, nil
}

// Publish appends n ads to the chain and makes the newest the head it
// serves. It returns ctx's error if ctx is done before the head is set.
func (p *Publisher) Publish(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	from := p.chain.Len()
	if err := p.chain.Extend(n); err != nil {
		return fmt.Errorf("publisher: extend: %w", err)
	}
	head := p.chain.Head()
	for i := from; i < from+n; i++ {
		var err error
		switch p.spec.Fault {
		case Honest:
			err = p.collect(ctx, i)
		case CorruptBlocks:
			err = p.corrupt(ctx, i)
		case BadSignature:
			head, err = p.alter(i)
		}
		if err != nil {
			return fmt.Errorf("publisher: ad %d: %w", i, err)
		}
	}
	if err := p.sync.SetHead(ctx, head); err != nil {
		return fmt.Errorf("publisher: set head: %w", err)
	}
	p.mu.Lock()
	p.published, p.head = from+n, head
	p.mu.Unlock()
	return nil
}

// chunks calls f with each entry chunk of ad i, in order.
func (p *Publisher) chunks(ctx context.Context, i int, f func(c cid.Cid, ch *schema.EntryChunk) error) error {
	ad, err := p.chain.Ad(i)
	if err != nil {
		return err
	}
	if !ad.HasEntries() {
		return nil
	}
	for c := ad.Entries; c.Defined(); {
		b, err := p.chain.Block(ctx, c)
		if err != nil {
			return err
		}
		ch, err := schema.DecodeEntryChunk(c, b)
		if err != nil {
			return err
		}
		if err := f(c, ch); err != nil {
			return err
		}
		c = ch.Next
	}
	return nil
}

// collect records the multihashes of ad i, for the ground truth.
func (p *Publisher) collect(ctx context.Context, i int) error {
	return p.chunks(ctx, i, func(_ cid.Cid, ch *schema.EntryChunk) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, mh := range ch.Entries {
			if _, ok := p.seen[string(mh)]; !ok {
				p.seen[string(mh)] = len(p.mhs)
				p.mhs = append(p.mhs, mh)
			}
		}
		return nil
	})
}

// corrupt flips a bit of every entry chunk of ad i.
func (p *Publisher) corrupt(ctx context.Context, i int) error {
	var ids []cid.Cid
	if err := p.chunks(ctx, i, func(c cid.Cid, _ *schema.EntryChunk) error {
		ids = append(ids, c)
		return nil
	}); err != nil {
		return err
	}
	for _, c := range ids {
		if err := p.chain.Corrupt(c); err != nil {
			return err
		}
	}
	return nil
}

// alter makes the BadSignature form of ad i: linked to the altered ad
// i-1, signed by the publisher's key, then given one more address, which
// the signature covers. It returns the altered ad's CID.
func (p *Publisher) alter(i int) (cid.Cid, error) {
	ad, err := p.chain.Ad(i)
	if err != nil {
		return cid.Undef, err
	}
	p.mu.RLock()
	if i > 0 {
		ad.PreviousID = p.mirrorOf[i-1]
	}
	p.mu.RUnlock()
	if err := ad.Sign(p.chain.PublisherKey); err != nil {
		return cid.Undef, err
	}
	ad.Addresses = append(ad.Addresses, "/ip4/127.0.0.1/tcp/1/http")
	b, c, err := ad.Encode()
	if err != nil {
		return cid.Undef, err
	}
	p.mu.Lock()
	p.mirror[c] = b
	p.mirrorOf = append(p.mirrorOf, c)
	p.mu.Unlock()
	return c, nil
}

// Lasting returns a multihash that the publisher s describes holds, with
// the same value, until it has horizon ads: one that no removal or
// metadata update up to then touches (chaingen.Lasting), and the number
// (from 1) of the ad that first advertises it. ok is false for a faulty
// publisher (nothing it publishes is indexed) and when no multihash
// lasts that long. A demo prints a lookup of it that stays valid for the
// whole run.
func (s Spec) Lasting(horizon int) (mh multihash.Multihash, ad int, ok bool, err error) {
	if s.Fault != Honest {
		return nil, 0, false, nil
	}
	cfg := s.chainConfig(0)
	ord, ad, ok, err := chaingen.Lasting(cfg, horizon)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	return multihash.Multihash(chaingen.AppendMultihash(nil, cfg.Seed, ord)), ad, true, nil
}
