package interop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/ipld/go-ipld-prime/storage/memstore"
	ipnischema "github.com/ipni/go-libipni/ingest/schema"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// refLinkproto returns go-libipni's link prototype for codec: its own
// schema.Linkproto (CIDv1, dag-json, sha2-256) for dag-json, the same
// prefix with dag-cbor otherwise.
func refLinkproto(codec uint64) cidlink.LinkPrototype {
	if codec == schema.DagJSON {
		return ipnischema.Linkproto
	}
	lp := ipnischema.Linkproto
	lp.Prefix.Codec = codec
	return lp
}

// refStore stores n the way go-libipni publishers do (a go-ipld-prime
// link system over a block store) and returns the stored block and its CID.
func refStore(t testing.TB, n ipld.Node, codec uint64) ([]byte, cid.Cid) {
	t.Helper()
	store := &memstore.Store{}
	lsys := cidlink.DefaultLinkSystem()
	lsys.SetWriteStorage(store)
	lsys.SetReadStorage(store)
	ctx := context.Background()
	lnk, err := lsys.Store(ipld.LinkContext{Ctx: ctx}, refLinkproto(codec), n)
	if err != nil {
		t.Fatalf("go-libipni store: %v", err)
	}
	block, err := store.Get(ctx, lnk.Binary())
	if err != nil {
		t.Fatalf("go-libipni store get: %v", err)
	}
	return block, lnk.(cidlink.Link).Cid
}

// refEncodeAd encodes a go-libipni advertisement with codec.
func refEncodeAd(t testing.TB, ad ipnischema.Advertisement, codec uint64) ([]byte, cid.Cid) {
	t.Helper()
	n, err := ad.ToNode()
	if err != nil {
		t.Fatalf("go-libipni ToNode: %v", err)
	}
	return refStore(t, n, codec)
}

// refEncodeChunk encodes a go-libipni entry chunk with codec.
func refEncodeChunk(t testing.TB, ch ipnischema.EntryChunk, codec uint64) ([]byte, cid.Cid) {
	t.Helper()
	n, err := ch.ToNode()
	if err != nil {
		t.Fatalf("go-libipni ToNode: %v", err)
	}
	return refStore(t, n, codec)
}

// toRef builds the go-libipni advertisement with the same fields as ad.
// Slices are copied, so that signing one does not touch the other.
func toRef(ad *schema.Advertisement) ipnischema.Advertisement {
	r := ipnischema.Advertisement{
		Provider:  ad.Provider,
		Addresses: cloneSlice(ad.Addresses),
		Signature: cloneSlice(ad.Signature),
		Entries:   cidlink.Link{Cid: ad.Entries},
		ContextID: cloneSlice(ad.ContextID),
		Metadata:  cloneSlice(ad.Metadata),
		IsRm:      ad.IsRm,
	}
	if ad.PreviousID.Defined() {
		r.PreviousID = cidlink.Link{Cid: ad.PreviousID}
	}
	if ep := ad.ExtendedProvider; ep != nil {
		r.ExtendedProvider = &ipnischema.ExtendedProvider{Override: ep.Override}
		if ep.Providers != nil {
			r.ExtendedProvider.Providers = make([]ipnischema.Provider, len(ep.Providers))
		}
		for i, p := range ep.Providers {
			r.ExtendedProvider.Providers[i] = ipnischema.Provider{
				ID:        p.ID,
				Addresses: cloneSlice(p.Addresses),
				Metadata:  cloneSlice(p.Metadata),
				Signature: cloneSlice(p.Signature),
			}
		}
	}
	return r
}

// fromRef builds our advertisement with the same fields as a go-libipni one.
func fromRef(t testing.TB, r *ipnischema.Advertisement) *schema.Advertisement {
	t.Helper()
	ad := &schema.Advertisement{
		Provider:  r.Provider,
		Addresses: cloneSlice(r.Addresses),
		Signature: cloneSlice(r.Signature),
		ContextID: cloneSlice(r.ContextID),
		Metadata:  cloneSlice(r.Metadata),
		IsRm:      r.IsRm,
	}
	if r.PreviousID != nil {
		ad.PreviousID = r.PreviousID.(cidlink.Link).Cid
	}
	if r.Entries != nil {
		l, ok := r.Entries.(cidlink.Link)
		if !ok {
			t.Fatalf("go-libipni Entries is a %T", r.Entries)
		}
		ad.Entries = l.Cid
	}
	if ep := r.ExtendedProvider; ep != nil {
		ad.ExtendedProvider = &schema.ExtendedProvider{Override: ep.Override}
		if ep.Providers != nil {
			ad.ExtendedProvider.Providers = make([]schema.ProviderEntry, len(ep.Providers))
		}
		for i, p := range ep.Providers {
			ad.ExtendedProvider.Providers[i] = schema.ProviderEntry{
				ID:        p.ID,
				Addresses: cloneSlice(p.Addresses),
				Metadata:  cloneSlice(p.Metadata),
				Signature: cloneSlice(p.Signature),
			}
		}
	}
	return ad
}

// toRefChunk and fromRefChunk convert entry chunks.
func toRefChunk(ch *schema.EntryChunk) ipnischema.EntryChunk {
	r := ipnischema.EntryChunk{}
	if ch.Entries != nil {
		r.Entries = make([]multihash.Multihash, len(ch.Entries))
		for i, e := range ch.Entries {
			r.Entries[i] = cloneSlice(e)
		}
	}
	if ch.Next.Defined() {
		r.Next = cidlink.Link{Cid: ch.Next}
	}
	return r
}

func fromRefChunk(r *ipnischema.EntryChunk) *schema.EntryChunk {
	ch := &schema.EntryChunk{Entries: make([]multihash.Multihash, len(r.Entries))}
	for i, e := range r.Entries {
		ch.Entries[i] = cloneSlice(e)
	}
	if r.Next != nil {
		ch.Next = r.Next.(cidlink.Link).Cid
	}
	return ch
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// describeAd renders every field of ad, for failure messages.
func describeAd(ad *schema.Advertisement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "PreviousID=%s Provider=%q Addresses=%q Signature=%x Entries=%s ContextID=%x Metadata=%x IsRm=%t",
		ad.PreviousID, ad.Provider, ad.Addresses, ad.Signature, ad.Entries, ad.ContextID, ad.Metadata, ad.IsRm)
	if ep := ad.ExtendedProvider; ep != nil {
		fmt.Fprintf(&b, " ExtendedProvider{Override=%t", ep.Override)
		for _, p := range ep.Providers {
			fmt.Fprintf(&b, " {ID=%q Addresses=%q Metadata=%x Signature=%x}", p.ID, p.Addresses, p.Metadata, p.Signature)
		}
		b.WriteString("}")
	}
	return b.String()
}

// mh returns the sha2-256 multihash of s.
func mh(s string) multihash.Multihash {
	m, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		panic(err)
	}
	return m
}

// jsonCid returns a CIDv1 dag-json of the sha2-256 of s, for links.
func jsonCid(s string) cid.Cid { return cid.NewCidV1(schema.DagJSON, mh(s)) }

// testKey is a private key and its peer ID.
type testKey struct {
	priv crypto.PrivKey
	id   peer.ID
}

// keyType is one of the libp2p key types IPNI signatures use.
type keyType struct {
	name string
	typ  int
	bits int
	// deterministic is set when the scheme signs the same message the
	// same way every time, so that envelopes can be compared byte for
	// byte.
	deterministic bool
}

var keyTypes = []keyType{
	{name: "Ed25519", typ: crypto.Ed25519, deterministic: true},
	{name: "Secp256k1", typ: crypto.Secp256k1, deterministic: true}, // RFC 6979 nonces
	{name: "ECDSA", typ: crypto.ECDSA},
	{name: "RSA", typ: crypto.RSA, bits: 2048, deterministic: true}, // PKCS #1 v1.5
}

var (
	keyMu    sync.Mutex
	keyCache = map[string]testKey{}
)

// key returns the n-th test key of type kt, generated once per process
// (RSA generation is slow) from a seeded stream where the type allows.
func key(t testing.TB, kt keyType, n int) testKey {
	t.Helper()
	keyMu.Lock()
	defer keyMu.Unlock()
	name := fmt.Sprintf("%s-%d", kt.name, n)
	if k, ok := keyCache[name]; ok {
		return k
	}
	var seed [32]byte
	copy(seed[:], name)
	priv, _, err := crypto.GenerateKeyPairWithReader(kt.typ, kt.bits, rand.NewChaCha8(seed))
	if err != nil {
		t.Fatalf("generate %s key: %v", name, err)
	}
	if got := priv.Type(); int(got) != kt.typ {
		t.Fatalf("generated a %s key of type %v", name, got)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	k := testKey{priv: priv, id: id}
	keyCache[name] = k
	return k
}

// loopback is the dial policy of these tests' clients: the reference
// publishers they fetch from listen on 127.0.0.1, which the default policy
// refuses.
var loopback = func() *netpolicy.Policy {
	p, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		panic(err)
	}
	return p
}()

// settledPool starts a small pool (2 publishers with removals, 2
// indexers on the memory store, a front end), closed when the test ends,
// and waits until every publisher has published its last of ads ads:
// the truth it returns holds still from then on.
func settledPool(ctx context.Context, t *testing.T, ads int) (*localpool.Pool, localpool.Truth) {
	t.Helper()
	p, err := localpool.Start(ctx, localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "memory",
		Interval: 50 * time.Millisecond, Entries: 5, MaxAds: ads, PollInterval: 200 * time.Millisecond,
		RemoveEvery: 4, // removals too: what was removed must not be found
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if _, err := p.WaitFor(ctx, "every publisher at its last ad", func(s *localpool.Snapshot) bool {
		n := 0
		for _, ps := range s.Publishers {
			if ps.Ads >= ads {
				n++
			}
		}
		return n == 2
	}); err != nil {
		t.Fatal(err)
	}
	truth, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p, truth
}
