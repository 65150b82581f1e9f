package interop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/ipld/go-ipld-prime"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	ipnisyncref "github.com/ipni/go-libipni/dagsync/ipnisync"
	ipnischema "github.com/ipni/go-libipni/ingest/schema"
	ipnimeta "github.com/ipni/go-libipni/metadata"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

// refAdSpec describes one advertisement of the chain that
// TestIngesterSyncsReferencePublisher builds with go-libipni.
type refAdSpec struct {
	ctx         string
	chunks      []int // multihashes per entry chunk, first chunk first; none: NoEntries
	shared      int   // multihashes repeated from the first ad's entries
	isRm        bool
	meta        []byte
	addrs       []string
	byPublisher bool // signed by the publisher instead of the provider
}

// refMetadata encodes go-libipni metadata for the n-th ad, distinct for
// each n: bitswap for 0, graphsync-filecoinv1 with its own piece otherwise.
func refMetadata(t *testing.T, n int) []byte {
	t.Helper()
	var p ipnimeta.Protocol = &ipnimeta.Bitswap{}
	if n > 0 {
		p = &ipnimeta.GraphsyncFilecoinV1{PieceCID: jsonCid(fmt.Sprintf("piece %d", n)), VerifiedDeal: n%3 == 0, FastRetrieval: true}
	}
	md := ipnimeta.Default.New(p)
	b, err := md.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIngesterSyncsReferencePublisher builds and signs a chain with
// go-libipni (ads with entry chunks, an IsRm, a metadata-only NoEntries
// update, one ad signed by the publisher rather than the provider), serves
// it with go-libipni's ipnisync publisher over plain HTTP on 127.0.0.1, and
// ingests it with our Ingester (ingest.New + Sync, an ipnisync.Client as
// the Syncer) into store/memory. The store must then hold exactly the
// multihash → value mapping computed from the ads as built, and the
// provider record their addresses, the publisher and the head.
func TestIngesterSyncsReferencePublisher(t *testing.T) {
	prov := key(t, keyTypes[0], 0)
	pubKey := key(t, keyTypes[0], 1)
	specs := []refAdSpec{
		{ctx: "ctx-a", chunks: []int{30, 30, 7}, meta: refMetadata(t, 0), addrs: []string{"/ip4/10.0.0.1/tcp/4001"}},
		{ctx: "ctx-b", chunks: []int{40}, meta: refMetadata(t, 1)},
		{ctx: "ctx-c", chunks: []int{25, 25}, shared: 5, meta: refMetadata(t, 2), byPublisher: true},
		{ctx: "ctx-b", isRm: true},
		{ctx: "ctx-a", meta: refMetadata(t, 4)}, // NoEntries: metadata update
		{ctx: "ctx-d", chunks: []int{12}, shared: 3, meta: refMetadata(t, 5),
			addrs: []string{"/ip4/10.0.0.2/tcp/4001", "/dns4/provider.example/tcp/443/https"}},
		{ctx: "ctx-e", meta: refMetadata(t, 6)}, // NoEntries for a context never stored: nothing
	}

	lsys, _ := refLinkSystem()
	lctx := ipld.LinkContext{Ctx: context.Background()}
	storeNode := func(n ipld.Node) cid.Cid {
		lnk, err := lsys.Store(lctx, ipnischema.Linkproto, n)
		if err != nil {
			t.Fatalf("go-libipni store: %v", err)
		}
		return lnk.(cidlink.Link).Cid
	}

	// The expected state, computed from the ads as built: per context its
	// multihashes and metadata, following IPNI's rules.
	type ctxState struct {
		mhs  map[string]bool
		meta []byte
	}
	model := map[string]*ctxState{}
	var firstMhs []multihash.Multihash
	var lastAddrs []string

	var prev ipld.Link
	var head cid.Cid
	for i, s := range specs {
		ad := ipnischema.Advertisement{
			PreviousID: prev,
			Provider:   prov.id.String(),
			Addresses:  s.addrs,
			ContextID:  []byte(s.ctx),
			Metadata:   s.meta,
			IsRm:       s.isRm,
			Entries:    ipnischema.NoEntries,
		}
		var mhs []multihash.Multihash
		if len(s.chunks) > 0 {
			// Every multihash of the ad, first chunk first; the shared
			// ones repeat the first ad's.
			n := 0
			for _, c := range s.chunks {
				n += c
			}
			mhs = append(mhs, firstMhs[:s.shared]...)
			for j := len(mhs); j < n; j++ {
				mhs = append(mhs, mh(fmt.Sprintf("ref ad %d entry %d", i, j)))
			}
			if i == 0 {
				firstMhs = mhs
			}
			// Store the chunks last first, so each links the next.
			var next ipld.Link
			end := n
			for c := len(s.chunks) - 1; c >= 0; c-- {
				start := end - s.chunks[c]
				ch := ipnischema.EntryChunk{Entries: mhs[start:end], Next: next}
				node, err := ch.ToNode()
				if err != nil {
					t.Fatal(err)
				}
				next = cidlink.Link{Cid: storeNode(node)}
				end = start
			}
			ad.Entries = next
		}
		signer := prov.priv
		if s.byPublisher {
			signer = pubKey.priv
		}
		if err := ad.Sign(signer); err != nil {
			t.Fatal(err)
		}
		node, err := ad.ToNode()
		if err != nil {
			t.Fatal(err)
		}
		head = storeNode(node)
		prev = cidlink.Link{Cid: head}

		// The model.
		if len(s.addrs) > 0 {
			lastAddrs = s.addrs
		}
		switch {
		case s.isRm:
			delete(model, s.ctx)
		case len(mhs) == 0:
			if st := model[s.ctx]; st != nil {
				st.meta = s.meta
			}
		default:
			st := model[s.ctx]
			if st == nil {
				st = &ctxState{mhs: map[string]bool{}}
				model[s.ctx] = st
			}
			st.meta = s.meta
			for _, m := range mhs {
				st.mhs[string(m)] = true
			}
		}
	}
	want := map[string][]string{} // multihash → values, as "ctx|metadata"
	for ctxID, st := range model {
		for m := range st.mhs {
			want[m] = append(want[m], ctxID+"|"+string(st.meta))
		}
	}
	if len(want) == 0 || len(model) != 3 {
		t.Fatalf("bad test chain: %d contexts, %d multihashes", len(model), len(want))
	}

	pub, err := ipnisyncref.NewPublisher(lsys, pubKey.priv, ipnisyncref.WithHTTPListenAddrs("127.0.0.1:0"))
	if err != nil {
		t.Fatalf("go-libipni NewPublisher: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	pub.SetRoot(head)
	addrs := pub.Addrs()
	for _, a := range addrs {
		if ip, err := a.ValueForProtocol(multiaddr.P_IP4); err != nil || ip != "127.0.0.1" {
			t.Fatalf("go-libipni publisher listens on %s, not 127.0.0.1", a)
		}
	}

	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	var clients []*ipnisync.Client
	t.Cleanup(func() {
		for _, c := range clients {
			_ = c.Close()
		}
	})
	newSyncer := func(p peer.ID, as []multiaddr.Multiaddr) (ingest.Syncer, error) {
		cl, err := ipnisync.New(peer.AddrInfo{ID: p, Addrs: as}, ipnisync.WithTimeout(5*time.Second), ipnisync.WithDialPolicy(loopback))
		if err == nil {
			clients = append(clients, cl)
		}
		return cl, err
	}
	ing, err := ingest.New(st, dssync.MutexWrap(datastore.NewMapDatastore()), newSyncer)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	if err := ing.Sync(ctx, pub.ID(), addrs, cid.Undef); err != nil {
		t.Fatalf("ingest from the go-libipni publisher: %v", err)
	}

	// The index: exactly the expected multihashes, each with exactly the
	// expected values.
	got := map[string][]string{}
	for e, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range e.Values {
			if v.ProviderID != prov.id {
				t.Errorf("multihash %s: value of provider %s, want %s", e.Multihash.B58String(), v.ProviderID, prov.id)
			}
			got[string(e.Multihash)] = append(got[string(e.Multihash)], string(v.ContextID)+"|"+string(v.Metadata))
		}
	}
	for m, vals := range want {
		slices.Sort(vals)
		g := got[m]
		slices.Sort(g)
		if !slices.Equal(g, vals) {
			t.Errorf("multihash %s: values %q, want %q", multihash.Multihash(m).B58String(), g, vals)
		}
	}
	for m := range got {
		if _, ok := want[m]; !ok {
			t.Errorf("multihash %s indexed, want absent (values %q)", multihash.Multihash(m).B58String(), got[m])
		}
	}
	if t.Failed() {
		t.Logf("indexed %d multihashes, want %d; contexts %v", len(got), len(want), slices.Sorted(maps.Keys(model)))
	}
	// Get agrees for a multihash shared by ctx-a, ctx-c and ctx-d.
	if n := len(want[string(firstMhs[0])]); n != 3 {
		t.Fatalf("bad test chain: first multihash in %d contexts", n)
	}
	vals, err := st.Get(ctx, firstMhs[0])
	if err != nil || len(vals) != 3 {
		t.Errorf("Get(shared multihash) = %d values, %v; want 3", len(vals), err)
	}

	// The provider record.
	info, err := st.Provider(ctx, prov.id)
	if err != nil {
		t.Fatalf("provider record: %v", err)
	}
	if !info.LastAdvertisement.Equals(head) {
		t.Errorf("LastAdvertisement %s, want the head %s", info.LastAdvertisement, head)
	}
	var gotAddrs []string
	for _, a := range info.AddrInfo.Addrs {
		gotAddrs = append(gotAddrs, a.String())
	}
	if !slices.Equal(gotAddrs, lastAddrs) {
		t.Errorf("provider addresses %v, want %v", gotAddrs, lastAddrs)
	}
	if info.Publisher.ID != pubKey.id {
		t.Errorf("publisher %s, want %s", info.Publisher.ID, pubKey.id)
	}
	if info.LastError != "" {
		t.Errorf("LastError %q", info.LastError)
	}
	s, _ := ing.Status(pub.ID())
	if s.AdsApplied != uint64(len(specs)) || !s.LastHead.Equals(head) || s.LastError != nil {
		t.Errorf("status: applied %d of %d, last head %s (want %s), error %v", s.AdsApplied, len(specs), s.LastHead, head, s.LastError)
	}
}
