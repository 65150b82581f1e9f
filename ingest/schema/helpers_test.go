package schema

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	"github.com/multiformats/go-multihash"
)

// seededKey returns an Ed25519 key derived from seed, so that test output
// and golden vectors are stable (Ed25519 signatures are deterministic).
func seededKey(t testing.TB, seed uint64) (crypto.PrivKey, peer.ID) {
	t.Helper()
	var s [32]byte
	s[0] = byte(seed)
	s[1] = byte(seed >> 8)
	key, _, err := crypto.GenerateEd25519Key(rand.NewChaCha8(s))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, id
}

// mh returns the sha2-256 multihash of s.
func mh(s string) multihash.Multihash {
	m, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		panic(err)
	}
	return m
}

// jsonCid returns a dag-json CID of s, for links.
func jsonCid(s string) cid.Cid { return cid.NewCidV1(DagJSON, mh(s)) }

// chunkOf returns a chunk of n multihashes derived from seed.
func chunkOf(seed string, n int, next cid.Cid) *EntryChunk {
	ch := &EntryChunk{Next: next}
	for i := range n {
		ch.Entries = append(ch.Entries, mh(fmt.Sprintf("%s-%d", seed, i)))
	}
	return ch
}

// sampleAds returns a set of ads covering every field and optional, with
// provider id.
func sampleAds(id peer.ID, epID peer.ID) map[string]*Advertisement {
	return map[string]*Advertisement{
		"genesis-noentries": {
			Provider:  id.String(),
			Addresses: []string{"/ip4/127.0.0.1/tcp/3104/http"},
			Entries:   NoEntries,
			ContextID: []byte("ctx-0"),
			Metadata:  []byte{0x80, 0x12},
		},
		"full": {
			PreviousID: jsonCid("previous ad"),
			Provider:   id.String(),
			Addresses:  []string{"/ip4/10.0.0.1/tcp/3104/http", "/dns4/example.com/tcp/443/https"},
			Entries:    jsonCid("first chunk"),
			ContextID:  []byte("ctx-1"),
			Metadata:   []byte{0x90, 0x12, 0xa3, 0x01, 0x02},
		},
		"removal": {
			PreviousID: jsonCid("full ad"),
			Provider:   id.String(),
			Addresses:  []string{"/ip4/10.0.0.1/tcp/3104/http"},
			Entries:    NoEntries,
			ContextID:  []byte("ctx-1"),
			IsRm:       true,
		},
		"empty-lists": {
			PreviousID: jsonCid("removal ad"),
			Provider:   id.String(),
			Entries:    NoEntries,
		},
		"extended": {
			PreviousID: jsonCid("removal ad"),
			Provider:   id.String(),
			Addresses:  []string{"/ip4/10.0.0.1/tcp/3104/http"},
			Entries:    jsonCid("second chunk"),
			ContextID:  []byte("ctx-2"),
			Metadata:   []byte{0x80, 0x12},
			ExtendedProvider: &ExtendedProvider{
				Override: true,
				Providers: []ProviderEntry{
					{ID: id.String(), Addresses: []string{"/ip4/10.0.0.1/tcp/3104/http"}, Metadata: []byte{0x80, 0x12}},
					{ID: epID.String(), Addresses: []string{"/ip4/10.0.0.2/tcp/3104/http"}, Metadata: []byte{0x09, 0x20}},
				},
			},
		},
	}
}

// randomAd returns an ad with random fields for differential tests. When
// odd is set its strings hold characters that need JSON escaping.
func randomAd(r *rand.Rand, id string, odd bool) *Advertisement {
	str := func() string {
		const plain = "abcdefghijklmnopqrstuvwxyz/0123456789.-_ ~<>&'"
		const special = "\"\\\x00\x01\x1f\x7fé\u2028\u2029😀\t\n"
		n := r.IntN(20)
		b := make([]rune, 0, n)
		for range n {
			if odd && r.IntN(4) == 0 {
				s := []rune(special)
				b = append(b, s[r.IntN(len(s))])
			} else {
				b = append(b, rune(plain[r.IntN(len(plain))]))
			}
		}
		return string(b)
	}
	bs := func(max int) []byte {
		if r.IntN(5) == 0 {
			return nil
		}
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	strs := func() []string {
		var out []string
		for range r.IntN(4) {
			out = append(out, str())
		}
		return out
	}
	ad := &Advertisement{
		Provider:  id,
		Addresses: strs(),
		Signature: bs(200),
		Entries:   jsonCid(str()),
		ContextID: bs(MaxContextIDLen),
		Metadata:  bs(100),
		IsRm:      r.IntN(2) == 0,
	}
	if r.IntN(2) == 0 {
		ad.PreviousID = jsonCid(str())
	}
	if r.IntN(4) == 0 {
		ad.Entries = NoEntries
	}
	if !ad.IsRm && r.IntN(2) == 0 {
		ad.ExtendedProvider = &ExtendedProvider{Override: r.IntN(2) == 0}
		for range r.IntN(3) {
			ad.ExtendedProvider.Providers = append(ad.ExtendedProvider.Providers, ProviderEntry{
				ID: id, Addresses: strs(), Metadata: bs(50), Signature: bs(100),
			})
		}
	}
	return ad
}

// sealDomain seals payload under any domain, for tests of the domain check.
func sealDomain(domain, codec string, payload []byte, key crypto.PrivKey) ([]byte, error) {
	env, err := record.Seal(&domainRecord{payloadRecord{codec: codec, payload: payload}, domain}, key)
	if err != nil {
		return nil, err
	}
	return env.Marshal()
}

type domainRecord struct {
	payloadRecord
	domain string
}

func (r *domainRecord) Domain() string { return r.domain }
