package ingest

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"

	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime"
	"github.com/ipld/go-ipld-prime/codec/dagcbor"
	"github.com/ipld/go-ipld-prime/codec/dagjson"
	"github.com/ipld/go-ipld-prime/datamodel"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/ipld/go-ipld-prime/node/basicnode"
	"github.com/ipld/go-ipld-prime/node/bindnode"
	ipldschema "github.com/ipld/go-ipld-prime/schema"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/schema"
)

// HAMT entries. An advertisement's Entries may link, instead of an entry
// chunk, the root of an IPLD HAMT (https://ipld.io/specs/advanced-data-layouts/hamt/spec/,
// as go-ipld-adl-hamt writes it) used as a set: its keys are the
// multihashes, its values (true) are ignored, as the reference indexer
// ignores them. The blocks are read here with the HAMT's own schema; keys
// are not re-hashed to check their position, since a set is only
// iterated.
const hamtSchemaText = `
type HashMapRoot struct {
	hashAlg Int
	bucketSize Int
	hamt HashMapNode
}

type HashMapNode struct {
	map Bytes
	data [Element]
} representation tuple

type Element union {
	| &HashMapNode link
	| Bucket list
} representation kinded

type Bucket [BucketEntry]

type BucketEntry struct {
	key Any
	value Any
} representation tuple
`

type (
	hamtRoot struct {
		HashAlg    int64
		BucketSize int64
		Hamt       hamtNode
	}
	hamtNode struct {
		Map  []byte
		Data []hamtElement
	}
	hamtElement struct {
		HashMapNode *datamodel.Link
		Bucket      *[]hamtEntry
	}
	hamtEntry struct {
		Key   datamodel.Node
		Value datamodel.Node
	}
)

var hamtRootProto, hamtNodeProto ipldschema.TypedPrototype

func init() {
	ts, err := ipld.LoadSchemaBytes([]byte(hamtSchemaText))
	if err != nil {
		panic(fmt.Errorf("ingest: loading the HAMT schema: %w", err)) // a bug in hamtSchemaText
	}
	hamtRootProto = bindnode.Prototype((*hamtRoot)(nil), ts.TypeByName("HashMapRoot"))
	hamtNodeProto = bindnode.Prototype((*hamtNode)(nil), ts.TypeByName("HashMapNode"))
}

// entriesKind classifies an Entries block that did not decode as an entry
// chunk: whether it decodes at all with its CID's codec, and whether it is
// a map with a "hamt" field (a HAMT root, maybe malformed) or an "Entries"
// field (an entry chunk, malformed).
func entriesKind(c cid.Cid, block []byte) (decodes, hamt, chunk bool) {
	n, err := decodeBlock(c.Prefix().Codec, block, basicnode.Prototype.Any)
	if err != nil {
		return false, false, false
	}
	if n.Kind() != datamodel.Kind_Map {
		return true, false, false
	}
	h, _ := n.LookupByString("hamt")
	e, _ := n.LookupByString("Entries")
	return true, h != nil, e != nil
}

// decodeBlock decodes block with codec (dag-json or dag-cbor) into a node
// of proto, turning the panics bindnode may raise on odd input into errors.
func decodeBlock(codec uint64, block []byte, proto datamodel.NodePrototype) (n datamodel.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", schema.ErrMalformed, r)
		}
	}()
	nb := proto.NewBuilder()
	switch codec {
	case schema.DagJSON:
		err = dagjson.Decode(nb, bytes.NewReader(block))
	case schema.DagCBOR:
		err = dagcbor.Decode(nb, bytes.NewReader(block))
	default:
		return nil, fmt.Errorf("%w: codec 0x%x", schema.ErrUnsupportedCodec, codec)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", schema.ErrMalformed, err)
	}
	return nb.Build(), nil
}

// verifyBlock checks a block fetched under c as the ingest/schema decoders
// do: its size, its CID's codec (dag-json or dag-cbor), and its hash.
func verifyBlock(c cid.Cid, block []byte) error {
	if len(block) > schema.MaxBlockSize {
		return fmt.Errorf("%w: %d bytes, limit %d", schema.ErrBlockTooLarge, len(block), schema.MaxBlockSize)
	}
	if codec := c.Prefix().Codec; codec != schema.DagJSON && codec != schema.DagCBOR {
		return fmt.Errorf("%w: codec 0x%x (want dag-json 0x129 or dag-cbor 0x71)", schema.ErrUnsupportedCodec, codec)
	}
	want, err := multihash.Decode(c.Hash())
	if err != nil {
		return fmt.Errorf("%w: CID multihash: %v", schema.ErrMalformed, err)
	}
	if want.Code == multihash.IDENTITY {
		if !bytes.Equal(want.Digest, block) {
			return fmt.Errorf("%w: identity CID does not hold the block", schema.ErrHashMismatch)
		}
		return nil
	}
	got, err := multihash.Sum(block, want.Code, want.Length)
	if err != nil {
		return fmt.Errorf("%w: hash function 0x%x: %v", schema.ErrUnsupportedCodec, want.Code, err)
	}
	if !bytes.Equal(got, c.Hash()) {
		return fmt.Errorf("%w: block hashes to %s", schema.ErrHashMismatch, got.B58String())
	}
	return nil
}

// decodeHAMTRoot verifies and decodes the root block of a HAMT fetched
// under c. Errors wrap the ingest/schema sentinels.
func decodeHAMTRoot(c cid.Cid, block []byte) (*hamtRoot, error) {
	if err := verifyBlock(c, block); err != nil {
		return nil, fmt.Errorf("decode HAMT root %s: %w", c, err)
	}
	n, err := decodeBlock(c.Prefix().Codec, block, hamtRootProto.Representation())
	if err != nil {
		return nil, fmt.Errorf("decode HAMT root %s: %w", c, err)
	}
	r, ok := bindnode.Unwrap(n).(*hamtRoot)
	if !ok || r == nil {
		return nil, fmt.Errorf("decode HAMT root %s: %w: not a HAMT root", c, schema.ErrMalformed)
	}
	// A bucket cannot hold more entries than a block has bytes.
	r.BucketSize = min(r.BucketSize, schema.MaxBlockSize)
	m := len(r.Hamt.Map)
	switch {
	case m == 0 || m&(m-1) != 0:
		err = fmt.Errorf("bitmap of %d bytes, not a power of two", m)
	case r.BucketSize < 1:
		err = fmt.Errorf("bucketSize %d", r.BucketSize)
	default:
		err = r.Hamt.check(m, int(r.BucketSize))
	}
	if err != nil {
		return nil, fmt.Errorf("decode HAMT root %s: %w: %v", c, schema.ErrMalformed, err)
	}
	return r, nil
}

// decodeHAMTNode verifies and decodes a child node of a HAMT whose root
// has a bitmap of mapLen bytes and the given bucket size.
func decodeHAMTNode(c cid.Cid, block []byte, mapLen, bucketSize int) (*hamtNode, error) {
	if err := verifyBlock(c, block); err != nil {
		return nil, fmt.Errorf("decode HAMT node %s: %w", c, err)
	}
	n, err := decodeBlock(c.Prefix().Codec, block, hamtNodeProto.Representation())
	if err != nil {
		return nil, fmt.Errorf("decode HAMT node %s: %w", c, err)
	}
	hn, ok := bindnode.Unwrap(n).(*hamtNode)
	if !ok || hn == nil {
		return nil, fmt.Errorf("decode HAMT node %s: %w: not a HAMT node", c, schema.ErrMalformed)
	}
	if err := hn.check(mapLen, bucketSize); err != nil {
		return nil, fmt.Errorf("decode HAMT node %s: %w: %v", c, schema.ErrMalformed, err)
	}
	return hn, nil
}

// check checks the rules of the HAMT spec that reading the set relies on:
// the bitmap has the root's size and one bit set per element, a bucket
// holds 1 to bucketSize entries whose keys are bytes (or strings), and a
// link is a CID.
func (n *hamtNode) check(mapLen, bucketSize int) error {
	if len(n.Map) != mapLen {
		return fmt.Errorf("bitmap of %d bytes, the root's has %d", len(n.Map), mapLen)
	}
	set := 0
	for _, b := range n.Map {
		set += bits.OnesCount8(b)
	}
	if set != len(n.Data) {
		return fmt.Errorf("bitmap has %d bits set for %d elements", set, len(n.Data))
	}
	for i, e := range n.Data {
		switch {
		case e.Bucket != nil:
			if k := len(*e.Bucket); k == 0 || k > bucketSize {
				return fmt.Errorf("element %d: bucket of %d entries (bucketSize %d)", i, k, bucketSize)
			}
			for j, be := range *e.Bucket {
				if _, err := hamtKey(be.Key); err != nil {
					return fmt.Errorf("element %d, entry %d: %v", i, j, err)
				}
			}
		case e.HashMapNode != nil:
			if cl, ok := (*e.HashMapNode).(cidlink.Link); !ok || !cl.Cid.Defined() {
				return fmt.Errorf("element %d: link is not a CID", i)
			}
		default:
			return fmt.Errorf("element %d: neither a bucket nor a link", i)
		}
	}
	return nil
}

// hamtKey returns the bytes of a HAMT key: bytes, as the spec has them, or
// a string holding them.
func hamtKey(k datamodel.Node) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("missing key")
	}
	switch k.Kind() {
	case datamodel.Kind_Bytes:
		return k.AsBytes()
	case datamodel.Kind_String:
		s, err := k.AsString()
		return []byte(s), err
	}
	return nil, fmt.Errorf("key of kind %s, want bytes", k.Kind())
}

// putHAMT walks the HAMT of ad's entries, whose root r was fetched under
// x.Entries, depth first, fetching and verifying each child node through
// src, and passes its keys to add. The root and the nodes it links count
// against the entries depth limit, as entry chunks do. With maxBlocks > 0,
// it stops after that many nodes, root included.
func (i *Ingester) putHAMT(ctx context.Context, src Syncer, ad Ad, r *hamtRoot, maxBlocks int, add func([]multihash.Multihash) error) error {
	mapLen, bucketSize := len(r.Hamt.Map), int(r.BucketSize)
	nodes := 1   // the root
	fetched := 1 // the root
	var stack []cid.Cid
	var keys []multihash.Multihash
	node := &r.Hamt
	for {
		keys = keys[:0]
		for _, e := range node.Data {
			if e.Bucket != nil {
				for _, be := range *e.Bucket {
					k, _ := hamtKey(be.Key) // checked
					keys = append(keys, k)
				}
				continue
			}
			if nodes >= i.cfg.entriesDepth {
				return fmt.Errorf("%w: HAMT entries of %s have more than %d nodes", ErrDepthLimit, ad.Cid, i.cfg.entriesDepth)
			}
			nodes++
			stack = append(stack, (*e.HashMapNode).(cidlink.Link).Cid) // checked
		}
		if len(keys) > 0 {
			if err := add(keys); err != nil {
				return err
			}
		}
		if len(stack) == 0 || maxBlocks > 0 && fetched >= maxBlocks {
			return nil
		}
		fetched++
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		block, err := src.Block(ctx, c)
		if err != nil {
			return err
		}
		if node, err = decodeHAMTNode(c, block, mapLen, bucketSize); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidBlock, err)
		}
	}
}
