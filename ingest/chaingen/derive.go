package chaingen

// Values derived from the seed: multihashes, keys and context IDs.

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// appendMultihash appends the sha2-256 multihash of the ordinal-th
// multihash of the seed.
func appendMultihash(dst []byte, seed, ordinal uint64) []byte {
	d := mhDigest(seed, ordinal)
	return append(append(dst, multihash.SHA2_256, sha256.Size), d[:]...)
}

func mhDigest(seed, ordinal uint64) [sha256.Size]byte {
	var in [24]byte
	copy(in[:8], "chaingen")
	binary.BigEndian.PutUint64(in[8:], seed)
	binary.BigEndian.PutUint64(in[16:], ordinal)
	return sha256.Sum256(in[:])
}

// derive returns 32 bytes for (label, i) of the chain's seed.
func (c *Chain) derive(label string, i uint64) [sha256.Size]byte {
	return derive(c.cfg.Seed, label, i)
}

// derive returns 32 bytes for (label, i) of seed.
func derive(seed uint64, label string, i uint64) [sha256.Size]byte {
	b := make([]byte, 0, 64)
	b = append(b, "indexkit/chaingen/"...)
	b = append(b, label...)
	b = binary.BigEndian.AppendUint64(b, seed)
	b = binary.BigEndian.AppendUint64(b, i)
	return sha256.Sum256(b)
}

// key derives an Ed25519 key and its peer ID.
func (c *Chain) key(label string, i uint64) (crypto.PrivKey, peer.ID, error) {
	seed := c.derive("key/"+label, i)
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		return nil, "", fmt.Errorf("chaingen: %s key: %w", label, err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		return nil, "", fmt.Errorf("chaingen: %s key: %w", label, err)
	}
	return k, id, nil
}

// newContext makes a new context ID of 8 to 32 bytes.
func (c *Chain) newContext() int32 {
	i := len(c.ctxIDs)
	c.ctxIDs = append(c.ctxIDs, c.contextID(i))
	return int32(i)
}

// contextID is the ID of the i-th new context: 8 to 32 bytes.
func (c *Chain) contextID(i int) []byte {
	d := c.derive("context", uint64(i))
	return d[:8+int(d[31])%25]
}

// mhsOf returns the number of multihashes of ad n (from 1) with entries:
// MhsPerAd, or with MinMhsPerAd one from MinMhsPerAd to MhsPerAd derived
// from (seed, n).
func (c *Chain) mhsOf(n int) int { return mhsOf(&c.cfg, n) }

// mhsOf is [Chain.mhsOf] of the chain cfg describes.
func mhsOf(cfg *Config, n int) int {
	lo, hi := cfg.MinMhsPerAd, cfg.MhsPerAd
	if lo <= 0 || lo >= hi {
		return hi
	}
	d := derive(cfg.Seed, "mhs", uint64(n))
	return lo + int(binary.BigEndian.Uint64(d[:8])%uint64(hi-lo+1))
}
