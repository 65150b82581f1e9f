package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/ipld/go-ipld-prime/storage/memstore"
	selectorparse "github.com/ipld/go-ipld-prime/traversal/selector/parse"
	ipnisyncref "github.com/ipni/go-libipni/dagsync/ipnisync"
	headref "github.com/ipni/go-libipni/dagsync/ipnisync/head"
	ipnischema "github.com/ipni/go-libipni/ingest/schema"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

// syncTimeout bounds every network exchange of these tests (all on
// 127.0.0.1).
const syncTimeout = 20 * time.Second

// testChain is an advertisement chain with its entry chunks: the blocks
// by CID, the head, and what a walk from the head must find.
type testChain struct {
	blocks  map[cid.Cid][]byte
	head    cid.Cid
	ads     []*schema.Advertisement // newest first
	adCIDs  []cid.Cid               // newest first
	entries map[cid.Cid][]multihash.Multihash
}

// buildChain makes a chain of n ads by provider key k, each with an entry
// chain of chunks chunks of per multihashes, some ads with NoEntries when
// withNoEntries is set. Ads whose index is in cborAds are stored as
// dag-cbor, the rest as dag-json.
func buildChain(t *testing.T, k testKey, n, chunks, per int, withNoEntries bool, cborAds map[int]bool) *testChain {
	t.Helper()
	ch := &testChain{blocks: map[cid.Cid][]byte{}, entries: map[cid.Cid][]multihash.Multihash{}}
	prev := cid.Undef
	var ads []*schema.Advertisement
	var adCIDs []cid.Cid
	for i := range n {
		ad := &schema.Advertisement{
			PreviousID: prev,
			Provider:   k.id.String(),
			Addresses:  []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", 3000+i)},
			ContextID:  []byte(fmt.Sprintf("ctx-%d", i%3)),
			Metadata:   []byte{0x80, 0x12},
			Entries:    schema.NoEntries,
		}
		if !withNoEntries || i%4 != 3 {
			next := cid.Undef
			var all []multihash.Multihash
			for c := chunks - 1; c >= 0; c-- {
				chunk := &schema.EntryChunk{Next: next}
				for j := range per {
					chunk.Entries = append(chunk.Entries, mh(fmt.Sprintf("ad %d chunk %d entry %d", i, c, j)))
				}
				b, cc, err := chunk.Encode()
				if err != nil {
					t.Fatal(err)
				}
				ch.blocks[cc] = b
				next = cc
				all = append(chunk.Entries, all...)
			}
			ad.Entries = next
			ch.entries[next] = all
		}
		if err := ad.Sign(k.priv); err != nil {
			t.Fatal(err)
		}
		codec := uint64(schema.DagJSON)
		if cborAds[i] {
			codec = schema.DagCBOR
		}
		b, c, err := ad.EncodeAs(codec)
		if err != nil {
			t.Fatal(err)
		}
		ch.blocks[c] = b
		prev = c
		ads = append([]*schema.Advertisement{ad}, ads...)
		adCIDs = append([]cid.Cid{c}, adCIDs...)
	}
	ch.head, ch.ads, ch.adCIDs = prev, ads, adCIDs
	return ch
}

// walkWithOurClient syncs a chain with our client: the head, then every ad
// back to the genesis, decoding and verifying each, and every entry chunk.
// It returns the ads and CIDs found, newest first, and the entries by
// Entries link.
func walkWithOurClient(t *testing.T, cl *ipnisync.Client, signer peer.ID) ([]*schema.Advertisement, []cid.Cid, map[cid.Cid][]multihash.Multihash) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	head, err := cl.Head(ctx)
	if err != nil {
		t.Fatalf("our client: head: %v", err)
	}
	var (
		ads     []*schema.Advertisement
		cids    []cid.Cid
		entries = map[cid.Cid][]multihash.Multihash{}
	)
	for c := head; c.Defined(); {
		if len(ads) > 1000 {
			t.Fatal("chain too long: a cycle?")
		}
		b, err := cl.Block(ctx, c)
		if err != nil {
			t.Fatalf("our client: ad %s: %v", c, err)
		}
		ad, err := schema.DecodeAdvertisement(c, b)
		if err != nil {
			t.Fatalf("ad %s: %v", c, err)
		}
		if got, err := ad.VerifySignature(); err != nil || got != signer {
			t.Fatalf("ad %s: signer %s, %v; want %s", c, got, err, signer)
		}
		ads, cids = append(ads, ad), append(cids, c)
		if ad.HasEntries() {
			var all []multihash.Multihash
			for e := ad.Entries; e.Defined(); {
				b, err := cl.Block(ctx, e)
				if err != nil {
					t.Fatalf("our client: chunk %s: %v", e, err)
				}
				chunk, err := schema.DecodeEntryChunk(e, b)
				if err != nil {
					t.Fatalf("chunk %s: %v", e, err)
				}
				all = append(all, chunk.Entries...)
				e = chunk.Next
			}
			entries[ad.Entries] = all
		}
		c = ad.PreviousID
	}
	return ads, cids, entries
}

// checkWalk compares a walk's result with the chain.
func checkWalk(t *testing.T, ch *testChain, ads []*schema.Advertisement, cids []cid.Cid, entries map[cid.Cid][]multihash.Multihash) {
	t.Helper()
	if len(ads) != len(ch.ads) {
		t.Fatalf("walked %d ads, want %d", len(ads), len(ch.ads))
	}
	for i := range ads {
		if !cids[i].Equals(ch.adCIDs[i]) || !ads[i].Equal(ch.ads[i]) {
			t.Errorf("ad %d: got %s %s\nwant %s %s", i, cids[i], describeAd(ads[i]), ch.adCIDs[i], describeAd(ch.ads[i]))
		}
	}
	if len(entries) != len(ch.entries) {
		t.Errorf("walked %d entry chains, want %d", len(entries), len(ch.entries))
	}
	for k, want := range ch.entries {
		got := entries[k]
		if len(got) != len(want) {
			t.Errorf("entries %s: %d multihashes, want %d", k, len(got), len(want))
			continue
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("entries %s: multihash %d differs", k, i)
				break
			}
		}
	}
}

// refLinkSystem returns a go-ipld-prime link system over a memory store,
// as go-libipni publishers and sync clients use.
func refLinkSystem() (ipld.LinkSystem, *memstore.Store) {
	store := &memstore.Store{}
	lsys := cidlink.DefaultLinkSystem()
	lsys.SetWriteStorage(store)
	lsys.SetReadStorage(store)
	return lsys, store
}

// TestOurClientSyncsReferencePublisher serves a chain from go-libipni's
// ipnisync.Publisher (its own HTTP server on 127.0.0.1) and walks it with
// our ipnisync.Client: head signature, every ad (signed by go-libipni) and
// every entry chunk, built and stored with go-libipni's types and link
// system.
func TestOurClientSyncsReferencePublisher(t *testing.T) {
	k := key(t, keyTypes[0], 0)
	// Build the chain with ours, then rebuild every block with go-libipni
	// (its types, its signature, its link system) so that the publisher
	// serves reference-made blocks.
	ours := buildChain(t, k, 12, 2, 50, true, nil)
	lsys, _ := refLinkSystem()
	ctx := context.Background()
	want := &testChain{blocks: map[cid.Cid][]byte{}, entries: map[cid.Cid][]multihash.Multihash{}}
	prev := cid.Undef
	for i := len(ours.ads) - 1; i >= 0; i-- {
		ad := *ours.ads[i]
		ad.PreviousID = prev
		ad.Signature = nil
		if ad.HasEntries() {
			// Store the entry chunks with go-libipni.
			var chunkCIDs []cid.Cid
			for e := ad.Entries; e.Defined(); {
				chunk, err := schema.DecodeEntryChunk(e, ours.blocks[e])
				if err != nil {
					t.Fatal(err)
				}
				chunkCIDs = append(chunkCIDs, e)
				e = chunk.Next
			}
			for j := len(chunkCIDs) - 1; j >= 0; j-- {
				chunk, _ := schema.DecodeEntryChunk(chunkCIDs[j], ours.blocks[chunkCIDs[j]])
				n, err := toRefChunk(chunk).ToNode()
				if err != nil {
					t.Fatal(err)
				}
				lnk, err := lsys.Store(ipld.LinkContext{Ctx: ctx}, ipnischema.Linkproto, n)
				if err != nil {
					t.Fatal(err)
				}
				if !lnk.(cidlink.Link).Cid.Equals(chunkCIDs[j]) {
					t.Fatalf("go-libipni stores chunk %s as %s", chunkCIDs[j], lnk)
				}
			}
			want.entries[ad.Entries] = ours.entries[ad.Entries]
		}
		ref := toRef(&ad)
		if err := ref.Sign(k.priv); err != nil {
			t.Fatal(err)
		}
		n, err := ref.ToNode()
		if err != nil {
			t.Fatal(err)
		}
		lnk, err := lsys.Store(ipld.LinkContext{Ctx: ctx}, ipnischema.Linkproto, n)
		if err != nil {
			t.Fatal(err)
		}
		prev = lnk.(cidlink.Link).Cid
		want.ads = append([]*schema.Advertisement{fromRef(t, &ref)}, want.ads...)
		want.adCIDs = append([]cid.Cid{prev}, want.adCIDs...)
	}
	want.head = prev

	pub, err := ipnisyncref.NewPublisher(lsys, k.priv, ipnisyncref.WithHTTPListenAddrs("127.0.0.1:0"))
	if err != nil {
		t.Fatalf("go-libipni NewPublisher: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	addrs := pub.Addrs()
	if len(addrs) == 0 {
		t.Fatal("go-libipni publisher has no address")
	}
	for _, a := range addrs {
		if ip, err := a.ValueForProtocol(multiaddr.P_IP4); err != nil || ip != "127.0.0.1" {
			t.Fatalf("go-libipni publisher listens on %s, not 127.0.0.1", a)
		}
	}
	cl, err := ipnisync.New(peer.AddrInfo{ID: pub.ID(), Addrs: addrs}, ipnisync.WithTimeout(5*time.Second), ipnisync.WithDialPolicy(loopback))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })

	// No head yet: go-libipni answers 204, ours reports ErrNoHead.
	hctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	if _, err := cl.Head(hctx); !errors.Is(err, ipnisync.ErrNoHead) {
		t.Errorf("head before SetRoot: %v, want ErrNoHead", err)
	}

	pub.SetRoot(want.head)
	ads, cids, entries := walkWithOurClient(t, cl, k.id)
	checkWalk(t, want, ads, cids, entries)
	if !cids[0].Equals(want.head) {
		t.Errorf("head %s, want %s", cids[0], want.head)
	}
	// The blocks go-libipni made are the ones ours makes for the same ads.
	for i, ad := range want.ads {
		if !ad.Equal(ours.ads[i]) { // Ed25519 signatures are deterministic
			t.Errorf("ad %d: go-libipni's signed ad differs from ours:\n theirs %s\n ours   %s", i, describeAd(ad), describeAd(ours.ads[i]))
		}
	}
	if !want.head.Equals(ours.head) {
		t.Errorf("go-libipni's head %s, ours %s for the same chain", want.head, ours.head)
	}
}

// TestReferenceClientSyncsOurPublisher serves a chain from our
// ipnisync.Publisher (on an httptest server on 127.0.0.1) and syncs it with
// go-libipni's ipnisync sync client: GetHead checks our signed head, Sync
// fetches every block with an explore-all selector, and go-libipni's store
// ends up with every block byte for byte, decodable by its schema. Some ads
// are dag-cbor, which our publisher serves as stored.
func TestReferenceClientSyncsOurPublisher(t *testing.T) {
	for _, kt := range keyTypes {
		t.Run(kt.name, func(t *testing.T) {
			k := key(t, kt, 0)
			ch := buildChain(t, k, 10, 3, 40, false, map[int]bool{2: true, 5: true, 9: true})
			var mu sync.Mutex
			served := map[cid.Cid]int{}
			src := ipnisync.BlockSourceFunc(func(_ context.Context, c cid.Cid) ([]byte, error) {
				b, ok := ch.blocks[c]
				if !ok {
					return nil, ipnisync.ErrNotFound
				}
				mu.Lock()
				served[c]++
				mu.Unlock()
				return b, nil
			})
			pub, err := ipnisync.NewPublisher(k.priv, src)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(pub)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv.Listener = ln
			srv.Start()
			t.Cleanup(srv.Close)
			ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
			defer cancel()
			if err := pub.SetHead(ctx, ch.head); err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			addr, err := multiaddr.NewMultiaddr(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", port))
			if err != nil {
				t.Fatal(err)
			}

			lsys, store := refLinkSystem()
			var hooked []cid.Cid
			refSync := ipnisyncref.NewSync(lsys, func(_ peer.ID, c cid.Cid) { hooked = append(hooked, c) },
				ipnisyncref.ClientHTTPTimeout(5*time.Second))
			t.Cleanup(refSync.Close)
			syncer := bounded(t, "go-libipni NewSyncer", func() (*ipnisyncref.Syncer, error) {
				return refSync.NewSyncer(peer.AddrInfo{ID: k.id, Addrs: []multiaddr.Multiaddr{addr}})
			})
			head, err := syncer.GetHead(ctx)
			if err != nil {
				t.Fatalf("go-libipni GetHead from our publisher: %v", err)
			}
			if !head.Equals(ch.head) {
				t.Fatalf("go-libipni reads head %s, want %s", head, ch.head)
			}
			if err := syncer.Sync(ctx, head, selectorparse.CommonSelector_ExploreAllRecursively); err != nil {
				t.Fatalf("go-libipni Sync from our publisher: %v", err)
			}
			if len(hooked) != len(ch.blocks) {
				t.Errorf("go-libipni synced %d blocks, the chain has %d", len(hooked), len(ch.blocks))
			}
			for c, want := range ch.blocks {
				got, err := store.Get(ctx, cidlink.Link{Cid: c}.Binary())
				if err != nil {
					t.Errorf("go-libipni store lacks %s: %v", c, err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("block %s: go-libipni stored different bytes", c)
				}
				mu.Lock()
				n := served[c]
				mu.Unlock()
				if n != 1 {
					t.Errorf("block %s served %d times, want once", c, n)
				}
			}
			// go-libipni reads the synced ads to the fields we wrote, and
			// verifies their signatures.
			for i, c := range ch.adCIDs {
				b, _ := store.Get(ctx, cidlink.Link{Cid: c}.Binary())
				ref, err := ipnischema.BytesToAdvertisement(c, b)
				if err != nil {
					t.Fatalf("go-libipni decodes synced ad %s: %v", c, err)
				}
				if got := fromRef(t, &ref); !got.Equal(ch.ads[i]) {
					t.Errorf("ad %s: go-libipni reads %s\nwant %s", c, describeAd(got), describeAd(ch.ads[i]))
				}
				if signer, err := ref.VerifySignature(); err != nil || signer != k.id {
					t.Errorf("ad %s: go-libipni verifies signer %s, %v", c, signer, err)
				}
			}
		})
	}
}

// bounded runs f, which takes no context, and fails the test if it does
// not return within syncTimeout.
func bounded[T any](t *testing.T, what string, f func() (T, error)) T {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.v
	case <-time.After(syncTimeout):
		t.Fatalf("%s: no answer in %s", what, syncTimeout)
	}
	panic("unreachable")
}

// TestSignedHeadMatchesReference: for each key type and topic, our signed
// head and go-libipni's verify with the other side, and with a
// deterministic signature scheme encode to the same bytes.
func TestSignedHeadMatchesReference(t *testing.T) {
	topics := []string{ipnisync.DefaultTopic, "", "/indexer/ingest/testnet",
		"/indexer/ingest/\"quoted\" back\\slash tab\t nl\n \x01\x1f\x7f \u2028\u2029 é 😀"}
	for _, kt := range keyTypes {
		for _, topic := range topics {
			t.Run(fmt.Sprintf("%s/%q", kt.name, topic), func(t *testing.T) {
				checkSignedHead(t, kt, topic)
			})
		}
	}
}

// TestSignedHeadTopicHTMLCharacters is TestSignedHeadMatchesReference for
// a topic with the characters <, > and &, which go-libipni (go-ipld-prime's
// dag-json encoder) writes as they are.
func TestSignedHeadTopicHTMLCharacters(t *testing.T) {
	for _, kt := range keyTypes {
		t.Run(kt.name, func(t *testing.T) {
			checkSignedHead(t, kt, "/indexer/ingest/<a>&<b>")
		})
	}
}

func checkSignedHead(t *testing.T, kt keyType, topic string) {
	head := jsonCid("head ad")
	k := key(t, kt, 0)
	ours, err := ipnisync.SignHead(k.priv, head, topic)
	if err != nil {
		t.Fatal(err)
	}
	oursBytes, err := ours.Encode()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := headref.NewSignedHead(head, topic, k.priv)
	if err != nil {
		t.Fatal(err)
	}
	theirsBytes, err := theirs.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if kt.deterministic && !bytes.Equal(oursBytes, theirsBytes) {
		t.Errorf("signed heads differ:\n ours   %s\n theirs %s", oursBytes, theirsBytes)
	}

	// go-libipni reads and verifies ours.
	dec, err := headref.Decode(bytes.NewReader(oursBytes))
	if err != nil {
		t.Fatalf("go-libipni decodes our head %s: %v", oursBytes, err)
	}
	if signer, err := dec.Validate(); err != nil || signer != k.id {
		t.Errorf("go-libipni verifies our head: %s, %v", signer, err)
	}
	if c := dec.Head.(cidlink.Link).Cid; !c.Equals(head) {
		t.Errorf("go-libipni reads head %s", c)
	}
	if topic != "" && (dec.Topic == nil || *dec.Topic != topic) || topic == "" && dec.Topic != nil {
		t.Errorf("go-libipni reads topic %v, want %q", dec.Topic, topic)
	}
	// Ours reads and verifies go-libipni's.
	back, err := ipnisync.DecodeSignedHead(theirsBytes)
	if err != nil {
		t.Fatalf("our DecodeSignedHead of %s: %v", theirsBytes, err)
	}
	if err := back.Verify(k.id); err != nil {
		t.Errorf("we reject go-libipni's head: %v", err)
	}
	if !back.Head.Equals(head) || back.Topic != topic {
		t.Errorf("we read head %s topic %q", back.Head, back.Topic)
	}
}
