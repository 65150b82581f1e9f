package schema

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime"
	"github.com/ipld/go-ipld-prime/codec/dagcbor"
	"github.com/ipld/go-ipld-prime/codec/dagjson"
	"github.com/ipld/go-ipld-prime/datamodel"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/ipld/go-ipld-prime/node/bindnode"
	ipldschema "github.com/ipld/go-ipld-prime/schema"
	"github.com/multiformats/go-multihash"
)

// schemaText is the IPLD schema of IPNI advertisements and entry chunks, as
// deployed (ipni/go-libipni ingest/schema). ProviderEntry is named
// "Provider" on the wire; the schema type names never appear in blocks.
const schemaText = `
type EntryChunk struct {
	Entries [Bytes]
	Next optional Link
}

type ExtendedProvider struct {
	Providers [Provider]
	Override Bool
}

type Provider struct {
	ID String
	Addresses [String]
	Metadata Bytes
	Signature Bytes
}

type Advertisement struct {
	PreviousID optional Link
	Provider String
	Addresses [String]
	Signature Bytes
	Entries Link
	ContextID Bytes
	Metadata Bytes
	IsRm Bool
	ExtendedProvider optional ExtendedProvider
}
`

// The bindnode mirrors of the schema. They use ipld links, which the public
// types replace with cid.Cid (cid.Undef for an absent optional link).
type (
	adNode struct {
		PreviousID       datamodel.Link
		Provider         string
		Addresses        []string
		Signature        []byte
		Entries          datamodel.Link
		ContextID        []byte
		Metadata         []byte
		IsRm             bool
		ExtendedProvider *epNode
	}
	epNode struct {
		Providers []providerNode
		Override  bool
	}
	providerNode struct {
		ID        string
		Addresses []string
		Metadata  []byte
		Signature []byte
	}
	chunkNode struct {
		Entries [][]byte
		Next    datamodel.Link
	}
)

var adProto, chunkProto ipldschema.TypedPrototype

func init() {
	ts, err := ipld.LoadSchemaBytes([]byte(schemaText))
	if err != nil {
		panic(fmt.Errorf("schema: loading the IPLD schema: %w", err)) // a bug in schemaText
	}
	adProto = bindnode.Prototype((*adNode)(nil), ts.TypeByName("Advertisement"))
	chunkProto = bindnode.Prototype((*chunkNode)(nil), ts.TypeByName("EntryChunk"))
}

// DecodeAdvertisement decodes and validates an advertisement block fetched
// under CID c. It first checks the block's size against [MaxBlockSize] and
// its hash against c, then decodes it with the codec c names (dag-json or
// dag-cbor) and runs [Advertisement.Validate]. It does not verify the
// signature.
//
// Errors wrap [ErrBlockTooLarge], [ErrUnsupportedCodec], [ErrHashMismatch],
// [ErrMalformed] or [ErrInvalidAdvertisement].
func DecodeAdvertisement(c cid.Cid, block []byte) (*Advertisement, error) {
	if err := checkBlock(c, block); err != nil {
		return nil, fmt.Errorf("decode advertisement %s: %w", c, err)
	}
	ad, err := unmarshalAdvertisement(c.Prefix().Codec, block)
	if err != nil {
		return nil, fmt.Errorf("decode advertisement %s: %w", c, err)
	}
	return ad, nil
}

// DecodeEntryChunk decodes and validates an entry chunk block fetched under
// CID c, with the same checks as [DecodeAdvertisement]. Errors wrap
// [ErrBlockTooLarge], [ErrUnsupportedCodec], [ErrHashMismatch],
// [ErrMalformed] or [ErrInvalidEntryChunk].
func DecodeEntryChunk(c cid.Cid, block []byte) (*EntryChunk, error) {
	if err := checkBlock(c, block); err != nil {
		return nil, fmt.Errorf("decode entry chunk %s: %w", c, err)
	}
	ch, err := unmarshalEntryChunk(c.Prefix().Codec, block)
	if err != nil {
		return nil, fmt.Errorf("decode entry chunk %s: %w", c, err)
	}
	return ch, nil
}

// AppendEntryChunk is [DecodeEntryChunk] for a caller that decodes long
// chains of chunks, such as an indexer's walker. It appends the chunk's
// entries to dst and returns the extended slice and the chunk's Next link
// (cid.Undef at the end of the chain), so that a caller that reuses dst
// allocates no EntryChunk and no slice per chunk. It accepts and rejects
// the same blocks as DecodeEntryChunk, with the same errors, and decodes
// the same entries, with two differences:
//
//   - The entries of a dag-cbor block alias block, where DecodeEntryChunk
//     copies it: the caller must not modify block while it uses them. The
//     entries of a dag-json block share one new buffer, as with
//     DecodeEntryChunk.
//   - With hashChecked, it does not hash the block: the caller has checked
//     it against c's multihash already (an ingest/ipnisync Client checks
//     every block it fetches). The other checks remain: the CID is
//     defined, the block within [MaxBlockSize], the codec dag-json or
//     dag-cbor.
//
// On error it returns dst as it was.
func AppendEntryChunk(dst []multihash.Multihash, c cid.Cid, block []byte, hashChecked bool) ([]multihash.Multihash, cid.Cid, error) {
	return appendEntryChunk(dst, nil, c, block, hashChecked)
}

// An EntryDecoder decodes the entry chunks of a chain one after another
// into memory it reuses, for a walker that copies what it keeps of one
// chunk's entries before it decodes the next: once it has grown to the
// chunks' size it allocates nothing per chunk, where [AppendEntryChunk]
// allocates a buffer for each dag-json chunk's entries. The zero value is
// ready to use. It is not safe for concurrent use.
type EntryDecoder struct {
	mhs []multihash.Multihash
	buf []byte
}

// Decode decodes block, the entry chunk of c, as [AppendEntryChunk] does
// onto an empty slice (the same checks and errors, the same entries), and
// returns its entries and its Next link. The entries are valid until the
// next call of Decode only: those of a dag-json block are decoded into the
// decoder's buffer, which the next call overwrites, and those of a
// dag-cbor block alias block.
func (d *EntryDecoder) Decode(c cid.Cid, block []byte, hashChecked bool) ([]multihash.Multihash, cid.Cid, error) {
	d.Reset() // the last chunk's entries may point into a block the caller frees
	mhs, next, err := appendEntryChunk(d.mhs, &d.buf, c, block, hashChecked)
	d.mhs = mhs
	return mhs, next, err
}

// Reset drops the decoder's references to the entries it decoded last,
// and so to the block they alias, keeping its memory for reuse.
func (d *EntryDecoder) Reset() {
	clear(d.mhs)
	d.mhs = d.mhs[:0]
}

// appendEntryChunk is AppendEntryChunk, with the entries of a dag-json
// block decoded into scratch when it is not nil.
func appendEntryChunk(dst []multihash.Multihash, scratch *[]byte, c cid.Cid, block []byte, hashChecked bool) ([]multihash.Multihash, cid.Cid, error) {
	err := checkBlockFormat(c, block)
	if err == nil && !hashChecked {
		err = checkHash(c, block)
	}
	if err != nil {
		return dst, cid.Undef, fmt.Errorf("decode entry chunk %s: %w", c, err)
	}
	codec := c.Type()
	var (
		out  []multihash.Multihash
		next cid.Cid
		ok   bool
	)
	switch codec {
	case DagJSON:
		out, next, ok = parseChunkJSON(dst, scratch, block)
	case DagCBOR:
		out, next, ok = parseChunkCBOR(dst, block, true)
	}
	if ok {
		return out, next, nil // within MaxChunkEntries by construction
	}
	ch, err := slowEntryChunk(codec, block)
	if err != nil {
		return dst, cid.Undef, fmt.Errorf("decode entry chunk %s: %w", c, err)
	}
	return append(dst, ch.Entries...), ch.Next, nil
}

// checkBlock checks a block's size, its CID's codec, and its hash.
func checkBlock(c cid.Cid, block []byte) error {
	if err := checkBlockFormat(c, block); err != nil {
		return err
	}
	return checkHash(c, block)
}

// checkBlockFormat checks a block's CID, size and codec.
func checkBlockFormat(c cid.Cid, block []byte) error {
	if !c.Defined() {
		return fmt.Errorf("%w: undefined CID", ErrUnsupportedCodec)
	}
	if len(block) > MaxBlockSize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrBlockTooLarge, len(block), MaxBlockSize)
	}
	if codec := c.Type(); codec != DagJSON && codec != DagCBOR {
		return fmt.Errorf("%w: codec 0x%x (want dag-json 0x129 or dag-cbor 0x71)", ErrUnsupportedCodec, codec)
	}
	return nil
}

// checkHash checks that block hashes to c's multihash.
func checkHash(c cid.Cid, block []byte) error {
	want, err := multihash.Decode(c.Hash())
	if err != nil {
		return fmt.Errorf("%w: CID multihash: %v", ErrMalformed, err)
	}
	if want.Code == multihash.IDENTITY {
		if !bytes.Equal(want.Digest, block) {
			return fmt.Errorf("%w: identity CID does not hold the block", ErrHashMismatch)
		}
		return nil
	}
	got, err := multihash.Sum(block, want.Code, want.Length)
	if err != nil {
		return fmt.Errorf("%w: hash function 0x%x: %v", ErrUnsupportedCodec, want.Code, err)
	}
	if !bytes.Equal(got, c.Hash()) {
		return fmt.Errorf("%w: block hashes to %s", ErrHashMismatch, got.B58String())
	}
	return nil
}

// decodeNode decodes block with codec into a node of proto, turning the
// panics bindnode may raise on odd input into errors.
func decodeNode(codec uint64, block []byte, proto ipldschema.TypedPrototype) (n datamodel.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrMalformed, r)
		}
	}()
	nb := proto.NewBuilder()
	switch codec {
	case DagJSON:
		err = dagjson.Decode(nb, bytes.NewReader(block))
	case DagCBOR:
		err = dagcbor.Decode(nb, bytes.NewReader(block))
	default:
		return nil, fmt.Errorf("%w: codec 0x%x", ErrUnsupportedCodec, codec)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nb.Build(), nil
}

func unmarshalAdvertisement(codec uint64, block []byte) (*Advertisement, error) {
	n, err := decodeNode(codec, block, adProto)
	if err != nil {
		return nil, err
	}
	an, ok := bindnode.Unwrap(n).(*adNode)
	if !ok || an == nil {
		return nil, fmt.Errorf("%w: not an advertisement", ErrMalformed)
	}
	ad := &Advertisement{
		Provider:  an.Provider,
		Addresses: an.Addresses,
		Signature: an.Signature,
		ContextID: an.ContextID,
		Metadata:  an.Metadata,
		IsRm:      an.IsRm,
	}
	if ad.PreviousID, err = linkCid("PreviousID", an.PreviousID); err != nil {
		return nil, err
	}
	if ad.Entries, err = linkCid("Entries", an.Entries); err != nil {
		return nil, err
	}
	if ep := an.ExtendedProvider; ep != nil {
		ad.ExtendedProvider = &ExtendedProvider{Override: ep.Override, Providers: make([]ProviderEntry, len(ep.Providers))}
		for i, p := range ep.Providers {
			ad.ExtendedProvider.Providers[i] = ProviderEntry(p)
		}
	}
	if err := ad.Validate(); err != nil {
		return nil, err
	}
	return ad, nil
}

func unmarshalEntryChunk(codec uint64, block []byte) (*EntryChunk, error) {
	var (
		ch *EntryChunk
		ok bool
	)
	switch codec {
	case DagJSON:
		ch, ok = fastChunkJSON(block)
	case DagCBOR:
		ch, ok = fastChunkCBOR(block)
	}
	if ok {
		return ch, nil // within MaxChunkEntries by construction
	}
	return slowEntryChunk(codec, block)
}

// slowEntryChunk decodes an entry chunk with go-ipld-prime.
func slowEntryChunk(codec uint64, block []byte) (*EntryChunk, error) {
	n, err := decodeNode(codec, block, chunkProto)
	if err != nil {
		return nil, err
	}
	cn, ok := bindnode.Unwrap(n).(*chunkNode)
	if !ok || cn == nil {
		return nil, fmt.Errorf("%w: not an entry chunk", ErrMalformed)
	}
	ch := &EntryChunk{Entries: make([]multihash.Multihash, len(cn.Entries))}
	for i, e := range cn.Entries {
		ch.Entries[i] = e
	}
	if ch.Next, err = linkCid("Next", cn.Next); err != nil {
		return nil, err
	}
	if err := ch.Validate(); err != nil {
		return nil, err
	}
	return ch, nil
}

// linkCid returns the CID of an optional link; cid.Undef for nil.
func linkCid(field string, l datamodel.Link) (cid.Cid, error) {
	if l == nil {
		return cid.Undef, nil
	}
	cl, ok := l.(cidlink.Link)
	if !ok || !cl.Cid.Defined() {
		return cid.Undef, fmt.Errorf("%w: %s is not a CID link", ErrMalformed, field)
	}
	return cl.Cid, nil
}

// Encode validates the advertisement and encodes it as dag-json, returning
// the block and its CID under [LinkPrefix]. Block and CID are identical to
// what the reference publishers (go-libipni) produce for the same fields.
// Errors wrap [ErrInvalidAdvertisement].
func (ad *Advertisement) Encode() (block []byte, c cid.Cid, err error) {
	return ad.EncodeAs(DagJSON)
}

// EncodeAs is [Advertisement.Encode] with a choice of codec: [DagJSON] or
// [DagCBOR]. The CID is CIDv1, sha2-256, of that codec.
func (ad *Advertisement) EncodeAs(codec uint64) (block []byte, c cid.Cid, err error) {
	if err := ad.Validate(); err != nil {
		return nil, cid.Undef, fmt.Errorf("encode advertisement: %w", err)
	}
	if codec == DagJSON {
		if b, ok := appendAdJSON(make([]byte, 0, adJSONSize(ad)), ad); ok {
			return blockCid(codec, b)
		}
	}
	b, err := encodeNode(codec, ad.node(), adProto)
	if err != nil {
		return nil, cid.Undef, fmt.Errorf("encode advertisement: %w", err)
	}
	return blockCid(codec, b)
}

// Encode validates the chunk and encodes it as dag-json, returning the
// block and its CID under [LinkPrefix], identical to the reference
// publishers'. Errors wrap [ErrInvalidEntryChunk].
func (ch *EntryChunk) Encode() (block []byte, c cid.Cid, err error) {
	return ch.EncodeAs(DagJSON)
}

// EncodeAs is [EntryChunk.Encode] with a choice of codec: [DagJSON] or
// [DagCBOR].
func (ch *EntryChunk) EncodeAs(codec uint64) (block []byte, c cid.Cid, err error) {
	if err := ch.Validate(); err != nil {
		return nil, cid.Undef, fmt.Errorf("encode entry chunk: %w", err)
	}
	if codec == DagJSON {
		return blockCid(codec, appendChunkJSON(make([]byte, 0, chunkJSONSize(ch)), ch))
	}
	b, err := encodeNode(codec, ch.node(), chunkProto)
	if err != nil {
		return nil, cid.Undef, fmt.Errorf("encode entry chunk: %w", err)
	}
	return blockCid(codec, b)
}

func blockCid(codec uint64, block []byte) ([]byte, cid.Cid, error) {
	mh, err := multihash.Sum(block, multihash.SHA2_256, -1)
	if err != nil {
		return nil, cid.Undef, err
	}
	return block, cid.NewCidV1(codec, mh), nil
}

var errBadCodec = errors.New("codec must be dag-json (0x129) or dag-cbor (0x71)")

// encodeNode encodes a bindnode mirror with go-ipld-prime: the dag-cbor
// encoder, and the dag-json one for strings the fast path does not handle.
func encodeNode(codec uint64, v any, proto ipldschema.TypedPrototype) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	n := bindnode.Wrap(v, proto.Type()).Representation()
	var buf bytes.Buffer
	switch codec {
	case DagJSON:
		err = dagjson.Encode(n, &buf)
	case DagCBOR:
		err = dagcbor.Encode(n, &buf)
	default:
		return nil, fmt.Errorf("%w: 0x%x: %v", ErrUnsupportedCodec, codec, errBadCodec)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func optLink(c cid.Cid) datamodel.Link {
	if !c.Defined() {
		return nil
	}
	return cidlink.Link{Cid: c}
}

// node returns the bindnode mirror of ad; nil slices become empty, as
// required lists and bytes must be present.
func (ad *Advertisement) node() *adNode {
	n := &adNode{
		PreviousID: optLink(ad.PreviousID),
		Provider:   ad.Provider,
		Addresses:  nonNil(ad.Addresses),
		Signature:  nonNil(ad.Signature),
		Entries:    optLink(ad.Entries),
		ContextID:  nonNil(ad.ContextID),
		Metadata:   nonNil(ad.Metadata),
		IsRm:       ad.IsRm,
	}
	if ep := ad.ExtendedProvider; ep != nil {
		n.ExtendedProvider = &epNode{Override: ep.Override, Providers: make([]providerNode, len(ep.Providers))}
		for i, p := range ep.Providers {
			n.ExtendedProvider.Providers[i] = providerNode{
				ID: p.ID, Addresses: nonNil(p.Addresses), Metadata: nonNil(p.Metadata), Signature: nonNil(p.Signature),
			}
		}
	}
	return n
}

func (ch *EntryChunk) node() *chunkNode {
	n := &chunkNode{Entries: make([][]byte, len(ch.Entries)), Next: optLink(ch.Next)}
	for i, e := range ch.Entries {
		n.Entries[i] = nonNil([]byte(e))
	}
	return n
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
