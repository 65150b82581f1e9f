package kv

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

func TestIndexKeyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	identity, _ := multihash.Sum([]byte("x"), multihash.IDENTITY, -1)
	mhs := []multihash.Multihash{
		identity,
		{0x00, 0x00}, // identity of nothing: the shortest multihash
		{0x12, 0x01, 0x09},
		{0x12, 0x01, 0x00},
	}
	for i := range 20 {
		mhs = append(mhs, storetest.Multihash("rt", i))
	}
	for _, mh := range mhs {
		for _, id := range []uint64{0, 1, 9, 0x0900, math.MaxUint64, rng.Uint64()} {
			k := appendIndexKey([]byte("junk"), mh, id)[4:]
			if !bytes.HasPrefix(k, appendIndexPrefix(nil, mh)) {
				t.Fatalf("key %x does not start with the prefix of %x", k, mh)
			}
			gotMH, gotID, ok := parseIndexKey(k)
			if !ok || !bytes.Equal(gotMH, mh) || gotID != id {
				t.Fatalf("parseIndexKey(%x) = %x, %d, %v; want %x, %d, true", k, gotMH, gotID, ok, mh, id)
			}
		}
	}
	k := appendIndexKey(nil, storetest.Multihash("rt", 0), 3)
	for _, bad := range [][]byte{
		nil,
		appendIndexPrefix(nil, storetest.Multihash("rt", 0)),
		k[:len(k)-1],
		append([]byte{prefixRecord}, k[1:]...),
		append(bytes.Clone(k[:len(k)-1]), 0x08),
		recordKey(3),
		{prefixIndex, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}, // no multihash
	} {
		if mh, id, ok := parseIndexKey(bad); ok {
			t.Errorf("parseIndexKey(%x) = %x, %d, true; want false", bad, mh, id)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 13))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	values := []store.Value{
		{ProviderID: storetest.PeerID("a"), ContextID: []byte("c"), Metadata: nil},
		{ProviderID: storetest.PeerID("a"), ContextID: []byte("c"), Metadata: []byte{0}},
		{ProviderID: "x", ContextID: make([]byte, store.MaxContextIDLen), Metadata: make([]byte, store.MaxMetadataLen)},
		{ProviderID: peer.ID(randBytes(200)), ContextID: randBytes(130), Metadata: randBytes(5000)}, // lengths of 2-byte varints
	}
	for range 200 {
		values = append(values, store.Value{
			ProviderID: peer.ID(randBytes(1 + rng.IntN(60))),
			ContextID:  randBytes(1 + rng.IntN(store.MaxContextIDLen)),
			Metadata:   randBytes(rng.IntN(40)),
		})
	}
	for _, v := range values {
		enc := encodeRecord(v)
		got, err := decodeRecord(enc)
		if err != nil {
			t.Fatalf("decodeRecord(encodeRecord(%v)): %v", v, err)
		}
		if !got.Equal(v) {
			t.Fatalf("round trip: got %v, want %v", got, v)
		}
		if len(v.Metadata) == 0 && got.Metadata != nil {
			t.Fatalf("empty metadata decoded as %q, want nil", got.Metadata)
		}
		// Cutting the record inside the provider or context ID field must
		// be reported; cutting the metadata only shortens it.
		fixed := len(enc) - len(v.Metadata)
		for n := range enc {
			got, err := decodeRecord(enc[:n])
			switch {
			case n < fixed && !errors.Is(err, errCorrupt):
				t.Fatalf("decodeRecord of %d of %d bytes: %v, %v; want errCorrupt", n, len(enc), got, err)
			case n >= fixed && (err != nil || !bytes.Equal(got.Metadata, v.Metadata[:n-fixed])):
				t.Fatalf("decodeRecord of %d of %d bytes: %v, %v", n, len(enc), got, err)
			}
		}
	}
}

func TestProviderRoundTrip(t *testing.T) {
	now := time.Now()
	adCid := cid.NewCidV1(cid.DagJSON, storetest.Multihash("ad", 1))
	frozen := cid.NewCidV0(storetest.Multihash("ad", 2))
	addrs := []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/4001")}
	for _, info := range []store.ProviderInfo{
		{AddrInfo: peer.AddrInfo{ID: storetest.PeerID("bare")}},
		{
			AddrInfo:          peer.AddrInfo{ID: storetest.PeerID("undef"), Addrs: addrs},
			LastAdvertisement: cid.Undef,
			FrozenAt:          cid.Undef,
			LastError:         "boom",
			LastErrorTime:     now,
		},
		{
			AddrInfo:              peer.AddrInfo{ID: storetest.PeerID("full"), Addrs: addrs},
			Publisher:             peer.AddrInfo{ID: storetest.PeerID("pub"), Addrs: addrs},
			LastAdvertisement:     adCid,
			LastAdvertisementTime: now,
			FrozenAt:              frozen,
			FrozenAtTime:          now.Add(time.Hour),
			ExtendedProviders: &store.ExtendedProviders{
				Providers: []peer.AddrInfo{{ID: storetest.PeerID("ext"), Addrs: addrs}},
				Metadatas: [][]byte{[]byte("md")},
				Contextual: []store.ContextualExtendedProviders{{
					Override: true, ContextID: []byte("ctx"),
					Providers: []peer.AddrInfo{{ID: storetest.PeerID("ext2")}},
					Metadatas: [][]byte{nil},
				}},
			},
		},
		{AddrInfo: peer.AddrInfo{ID: storetest.PeerID("frozen only")}, FrozenAt: adCid},
	} {
		enc, err := encodeProvider(info)
		if err != nil {
			t.Fatalf("encodeProvider: %v", err)
		}
		got, err := decodeProvider(enc)
		if err != nil {
			t.Fatalf("decodeProvider(%s): %v", enc, err)
		}
		if got.AddrInfo.ID != info.AddrInfo.ID || len(got.AddrInfo.Addrs) != len(info.AddrInfo.Addrs) ||
			got.Publisher.ID != info.Publisher.ID ||
			!got.LastAdvertisement.Equals(info.LastAdvertisement) || got.LastAdvertisement.Defined() != info.LastAdvertisement.Defined() ||
			!got.FrozenAt.Equals(info.FrozenAt) || got.FrozenAt.Defined() != info.FrozenAt.Defined() ||
			!got.LastAdvertisementTime.Equal(info.LastAdvertisementTime) ||
			!got.FrozenAtTime.Equal(info.FrozenAtTime) ||
			!got.LastErrorTime.Equal(info.LastErrorTime) ||
			got.LastError != info.LastError ||
			(got.ExtendedProviders == nil) != (info.ExtendedProviders == nil) {
			t.Fatalf("round trip:\n got %+v\nwant %+v\nencoded %s", got, info, enc)
		}
		if ep := info.ExtendedProviders; ep != nil {
			g := got.ExtendedProviders
			if len(g.Providers) != len(ep.Providers) || len(g.Contextual) != 1 ||
				!g.Contextual[0].Override || string(g.Contextual[0].ContextID) != "ctx" ||
				string(g.Metadatas[0]) != "md" {
				t.Fatalf("extended providers: got %+v, want %+v", g, ep)
			}
		}
		if !info.LastAdvertisement.Defined() && strings.Contains(string(enc), "LastAdvertisement\"") {
			t.Errorf("undefined CID stored: %s", enc)
		}
	}
	for _, bad := range []string{
		"",
		"{",
		"null x",
		`{"LastAdvertisement":"not a cid"}`,
		`{"FrozenAt":"bafy"}`,
		`{"AddrInfo":{"ID":"not a peer"}}`,
		`{"LastAdvertisementTime":"yesterday"}`,
	} {
		if _, err := decodeProvider([]byte(bad)); !errors.Is(err, errCorrupt) {
			t.Errorf("decodeProvider(%q): err = %v, want one wrapping errCorrupt", bad, err)
		}
	}
}

// TestProviderRecordReadsBack checks that encodeProvider refuses a record
// that decodeProvider could not read back. Peer IDs are stored in their
// text form, which only parses for well-formed IDs; a record holding any
// other (an empty extended provider, say) used to be written, after which
// Provider reported it corrupt and Providers stopped at it, hiding every
// other provider.
func TestProviderRecordReadsBack(t *testing.T) {
	id := storetest.PeerID("p")
	for name, info := range map[string]store.ProviderInfo{
		"malformed ID":        {AddrInfo: peer.AddrInfo{ID: "x"}},
		"malformed publisher": {AddrInfo: peer.AddrInfo{ID: id}, Publisher: peer.AddrInfo{ID: "x"}},
		"empty extended provider": {AddrInfo: peer.AddrInfo{ID: id}, ExtendedProviders: &store.ExtendedProviders{
			Providers: []peer.AddrInfo{{}},
		}},
		"empty contextual provider": {AddrInfo: peer.AddrInfo{ID: id}, ExtendedProviders: &store.ExtendedProviders{
			Contextual: []store.ContextualExtendedProviders{{ContextID: []byte("c"), Providers: []peer.AddrInfo{{}}}},
		}},
	} {
		enc, err := encodeProvider(info)
		if err == nil {
			_, derr := decodeProvider(enc)
			t.Errorf("%s: encodeProvider accepted a record that does not read back (%v): %s", name, derr, enc)
			continue
		}
		if !errors.Is(err, store.ErrInvalidValue) {
			t.Errorf("%s: err = %v, want one wrapping store.ErrInvalidValue", name, err)
		}
	}
}

// TestIDMergerNotDeletable guards the fix described at IDMerger: Pebble
// v2.1.7 panics in compactions when a DeletableValueMerger drops a key whose
// merge consumed an older SET, so IDMerger must not offer DeletableFinish.
func TestIDMergerNotDeletable(t *testing.T) {
	m, _ := NewIDMerger(nil, nil)
	defer m.Close()
	if _, ok := any(m).(interface {
		DeletableFinish(includesBase bool) ([]byte, bool, io.Closer, error)
	}); ok {
		t.Fatal("IDMerger implements DeletableFinish, which crashes Pebble v2.1.7 compactions (see IDMerger)")
	}
}
