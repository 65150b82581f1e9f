package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/ipni/go-libipni/announce/httpsender"
	ipnimsg "github.com/ipni/go-libipni/announce/message"
	ipnisyncref "github.com/ipni/go-libipni/dagsync/ipnisync"
	findclient "github.com/ipni/go-libipni/find/client"
	"github.com/ipni/go-libipni/find/model"
	ipnischema "github.com/ipni/go-libipni/ingest/schema"
	ipnimeta "github.com/ipni/go-libipni/metadata"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

// indexerWait bounds every wait on the indexer process (start, ingestion,
// shutdown).
const indexerWait = proctest.DefaultTimeout

// startIndexer runs the indexer binary with a fresh data directory, the
// memory store, every listener (libp2p included) on 127.0.0.1 with a
// port picked by the system and loopback publishers allowed, and waits for its msg=starting line. The
// process is stopped by PID when the test ends: SIGTERM, then SIGKILL if
// it has not exited within indexerWait.
func startIndexer(t *testing.T, bin string) *proctest.Proc {
	t.Helper()
	args := []string{
		"-dir", t.TempDir(), "-store", "memory",
		"-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-metrics", "127.0.0.1:0", "-p2p", "/ip4/127.0.0.1/tcp/0",
		"-log-level", "debug", "-progress", "1s",
		// The reference publishers of these tests are on loopback too.
		"-allow-private-addrs",
	}
	p := proctest.Start(t, bin, args...)
	p.WaitMsg("starting")
	for _, name := range []string{"find", "ingest", "p2p"} {
		a := p.Addr(name)
		if !strings.HasPrefix(a, "127.0.0.1:") && !strings.HasPrefix(a, "/ip4/127.0.0.1/") {
			t.Fatalf("indexer %s listener on %s, not 127.0.0.1", name, a)
		}
	}
	return p
}

// wantValue is what the find API must answer for a multihash.
type wantValue struct {
	provider peer.ID
	addrs    []string
	ctxID    []byte
	meta     []byte
}

// refPublisher is a go-libipni ipnisync publisher of a chain built and
// signed with go-libipni.
type refPublisher struct {
	name  string
	pub   *ipnisyncref.Publisher
	id    peer.ID
	addrs []multiaddr.Multiaddr // where the indexer fetches from, without /p2p
	head  cid.Cid
	want  map[string]wantValue // multihash → value
}

// buildRefChain stores in lsys a chain of nAds ads by provider prov, each
// with its own context ID, go-libipni metadata (bitswap for the first,
// graphsync-filecoinv1 with a distinct piece for the others) and an entry
// chain of two chunks; it returns the head and the multihash → value map.
func buildRefChain(t *testing.T, lsys ipld.LinkSystem, name string, prov testKey, nAds, metaBase int) (cid.Cid, map[string]wantValue) {
	t.Helper()
	heads, want := buildRefChainSteps(t, lsys, name, prov, nAds, metaBase)
	return heads[len(heads)-1], want
}

// buildRefChainSteps is buildRefChain, returning the head after each
// advertisement, oldest first.
func buildRefChainSteps(t *testing.T, lsys ipld.LinkSystem, name string, prov testKey, nAds, metaBase int) ([]cid.Cid, map[string]wantValue) {
	t.Helper()
	lctx := ipld.LinkContext{Ctx: context.Background()}
	store := func(n ipld.Node) cid.Cid {
		lnk, err := lsys.Store(lctx, ipnischema.Linkproto, n)
		if err != nil {
			t.Fatalf("go-libipni store: %v", err)
		}
		return lnk.(cidlink.Link).Cid
	}
	want := map[string]wantValue{}
	addrs := []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", 40000+metaBase)}
	var prev ipld.Link
	var heads []cid.Cid
	for i := range nAds {
		meta := refMetadata(t, metaBase+i)
		if i == 0 {
			meta = refMetadata(t, 0) // bitswap
		}
		ctxID := []byte(fmt.Sprintf("%s ctx %d", name, i))
		// Two chunks: 15 then 10 multihashes.
		var mhs []multihash.Multihash
		for j := range 25 {
			mhs = append(mhs, mh(fmt.Sprintf("%s ad %d entry %d", name, i, j)))
		}
		var next ipld.Link
		for _, r := range [][2]int{{15, 25}, {0, 15}} {
			n, err := ipnischema.EntryChunk{Entries: mhs[r[0]:r[1]], Next: next}.ToNode()
			if err != nil {
				t.Fatal(err)
			}
			next = cidlink.Link{Cid: store(n)}
		}
		ad := ipnischema.Advertisement{
			PreviousID: prev,
			Provider:   prov.id.String(),
			Addresses:  addrs,
			Entries:    next,
			ContextID:  ctxID,
			Metadata:   meta,
		}
		if err := ad.Sign(prov.priv); err != nil {
			t.Fatalf("go-libipni Sign: %v", err)
		}
		n, err := ad.ToNode()
		if err != nil {
			t.Fatal(err)
		}
		head := store(n)
		heads = append(heads, head)
		prev = cidlink.Link{Cid: head}
		for _, m := range mhs {
			want[string(m)] = wantValue{provider: prov.id, addrs: addrs, ctxID: ctxID, meta: meta}
		}
	}
	return heads, want
}

// newHTTPRefPublisher serves a go-libipni chain with go-libipni's ipnisync
// publisher over plain HTTP on 127.0.0.1.
func newHTTPRefPublisher(t *testing.T, name string, pubKey, prov testKey, metaBase int) *refPublisher {
	t.Helper()
	lsys, _ := refLinkSystem()
	head, want := buildRefChain(t, lsys, name, prov, 3, metaBase)
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
	return &refPublisher{name: name, pub: pub, id: pubKey.id, addrs: addrs, head: head, want: want}
}

// newLibp2pRefPublisher serves a go-libipni chain with go-libipni's
// ipnisync publisher over libp2p only (libp2phttp on a stream host
// listening on 127.0.0.1 TCP, no relay; no bootstrap, mDNS or NAT port
// mapping, none of which libp2p.New turns on by default).
func newLibp2pRefPublisher(t *testing.T, name string, pubKey, prov testKey, metaBase int) *refPublisher {
	t.Helper()
	h, err := libp2p.New(
		libp2p.Identity(pubKey.priv),
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(),
	)
	if err != nil {
		t.Fatalf("libp2p host: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	lsys, _ := refLinkSystem()
	head, want := buildRefChain(t, lsys, name, prov, 3, metaBase)
	pub, err := ipnisyncref.NewPublisher(lsys, pubKey.priv, ipnisyncref.WithStreamHost(h))
	if err != nil {
		t.Fatalf("go-libipni NewPublisher on a libp2p host: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	pub.SetRoot(head)
	addrs := h.Addrs()
	if len(addrs) == 0 {
		t.Fatal("libp2p host has no listen address")
	}
	for _, a := range addrs {
		if ip, err := a.ValueForProtocol(multiaddr.P_IP4); err != nil || ip != "127.0.0.1" {
			t.Fatalf("libp2p publisher listens on %s, not 127.0.0.1", a)
		}
		if _, err := a.ValueForProtocol(multiaddr.P_HTTP); err == nil {
			t.Fatalf("libp2p publisher address %s is an HTTP address", a)
		}
	}
	return &refPublisher{name: name, pub: pub, id: pubKey.id, addrs: addrs, head: head, want: want}
}

// announceWithSender announces p's head with go-libipni's HTTP announce
// sender (httpsender, which appends /p2p/<publisher> to every address), to
// path of the indexer's ingest listener, as CBOR or as JSON.
func announceWithSender(t *testing.T, ingestAddr, path string, p *refPublisher, asJSON bool) {
	t.Helper()
	u := &url.URL{Scheme: "http", Host: ingestAddr, Path: path}
	s, err := httpsender.New([]*url.URL{u}, p.id, httpsender.WithTimeout(indexerWait))
	if err != nil {
		t.Fatalf("go-libipni httpsender: %v", err)
	}
	defer s.Close()
	msg := ipnimsg.Message{Cid: p.head}
	msg.SetAddrs(p.addrs)
	ctx, cancel := context.WithTimeout(context.Background(), indexerWait)
	defer cancel()
	send, enc := s.Send, "CBOR"
	if asJSON {
		send, enc = s.SendJson, "JSON"
	}
	if err := send(ctx, msg); err != nil {
		t.Fatalf("%s: go-libipni httpsender %s announce to %s: %v", p.name, enc, u, err)
	}
}

// announceJSONByHand PUTs go-libipni's announce Message, with
// /p2p/<publisher> appended to its addresses, marshalled with
// encoding/json, to path of the ingest listener with Content-Type
// application/json; the indexer must answer 204.
func announceJSONByHand(t *testing.T, ingestAddr, path string, p *refPublisher) {
	t.Helper()
	p2p, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: p.id, Addrs: p.addrs})
	if err != nil {
		t.Fatal(err)
	}
	msg := ipnimsg.Message{Cid: p.head}
	msg.SetAddrs(p2p)
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), indexerWait)
	defer cancel()
	u := "http://" + ingestAddr + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: PUT %s: %v", p.name, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%s: PUT %s with %s: %d %s", p.name, u, body, resp.StatusCode, b)
	}
}

// checkFound compares a find response for m with want; it returns a
// description of the first difference, "" when they agree.
func checkFound(m multihash.Multihash, resp *model.FindResponse, want wantValue) string {
	if len(resp.MultihashResults) != 1 {
		return fmt.Sprintf("%d multihash results, want 1", len(resp.MultihashResults))
	}
	r := resp.MultihashResults[0]
	if !bytes.Equal(r.Multihash, m) {
		return fmt.Sprintf("result for multihash %s", r.Multihash.B58String())
	}
	if len(r.ProviderResults) != 1 {
		return fmt.Sprintf("%d provider results, want 1: %+v", len(r.ProviderResults), r.ProviderResults)
	}
	pr := r.ProviderResults[0]
	if pr.Provider == nil {
		return "provider result without Provider"
	}
	if pr.Provider.ID != want.provider {
		return fmt.Sprintf("provider %s, want %s", pr.Provider.ID, want.provider)
	}
	var got []string
	for _, a := range pr.Provider.Addrs {
		got = append(got, a.String())
	}
	if strings.Join(got, " ") != strings.Join(want.addrs, " ") {
		return fmt.Sprintf("provider addresses %q, want %q", got, want.addrs)
	}
	if !bytes.Equal(pr.ContextID, want.ctxID) {
		return fmt.Sprintf("context ID %q, want %q", pr.ContextID, want.ctxID)
	}
	if !bytes.Equal(pr.Metadata, want.meta) {
		return fmt.Sprintf("metadata %x, want %x", pr.Metadata, want.meta)
	}
	return ""
}

// TestIndexerIngestsReferencePublishers runs examples/indexer as a process
// and has four go-libipni ipnisync publishers announce to it, each serving
// a chain built and signed with go-libipni (three ads, each with its own
// context ID and go-libipni metadata, bitswap then graphsync-filecoinv1,
// and a two-chunk entry chain):
//
//	http-cbor-announce:        plain HTTP, httpsender CBOR  → PUT /announce
//	http-json-ingest-announce: plain HTTP, hand-built JSON  → PUT /ingest/announce
//	p2p-cbor-ingest-announce:  libp2p,     httpsender CBOR  → PUT /ingest/announce
//	p2p-json-announce:         libp2p,     httpsender JSON  → PUT /announce
//
// go-libipni's find client must then find every multihash with the right
// provider (ID and addresses), context ID and metadata, and an unknown
// multihash gets 404, which the client reports as an empty response
// without error.
func TestIndexerIngestsReferencePublishers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/indexer")
	}
	t.Parallel() // with the other test that runs a node: each mostly waits on its node
	bin := proctest.Build(t, "github.com/indexkit/indexkit/examples/indexer")
	node := startIndexer(t, bin)
	ingestAddr := node.Addr("ingest")
	findURL := "http://" + node.Addr("find")

	pubs := []*refPublisher{
		newHTTPRefPublisher(t, "http-cbor-announce", key(t, keyTypes[0], 30), key(t, keyTypes[0], 31), 10),
		newHTTPRefPublisher(t, "http-json-ingest-announce", key(t, keyTypes[1], 32), key(t, keyTypes[0], 33), 20),
		newLibp2pRefPublisher(t, "p2p-cbor-ingest-announce", key(t, keyTypes[0], 34), key(t, keyTypes[1], 35), 30),
		newLibp2pRefPublisher(t, "p2p-json-announce", key(t, keyTypes[0], 36), key(t, keyTypes[0], 37), 40),
	}
	announceWithSender(t, ingestAddr, "/announce", pubs[0], false)
	announceJSONByHand(t, ingestAddr, "/ingest/announce", pubs[1])
	announceWithSender(t, ingestAddr, "/ingest/announce", pubs[2], false)
	announceWithSender(t, ingestAddr, "/announce", pubs[3], true)

	fc, err := findclient.New(findURL)
	if err != nil {
		t.Fatalf("go-libipni find client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), indexerWait)
	defer cancel()

	// Wait (bounded) until every multihash of every chain is found, then
	// check each answer exactly.
	type pending struct {
		pub  *refPublisher
		m    multihash.Multihash
		want wantValue
	}
	var all []pending
	for _, p := range pubs {
		for m, w := range p.want {
			all = append(all, pending{p, multihash.Multihash(m), w})
		}
	}
	if len(all) != 4*3*25 {
		t.Fatalf("bad test chains: %d multihashes", len(all))
	}
	left := all
	for len(left) > 0 {
		var still []pending
		for _, x := range left {
			resp, err := fc.Find(ctx, x.m)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				t.Fatalf("%s: go-libipni Find(%s): %v", x.pub.name, x.m.B58String(), err)
			}
			if len(resp.MultihashResults) == 0 {
				still = append(still, x)
			}
		}
		if len(still) > 0 && ctx.Err() != nil {
			missing := map[string]int{}
			for _, x := range still {
				missing[x.pub.name]++
			}
			t.Fatalf("after %s, multihashes not found by publisher: %v", indexerWait, missing)
		}
		left = still
		if len(left) > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	for _, x := range all {
		resp, err := fc.Find(ctx, x.m)
		if err != nil {
			t.Fatalf("%s: go-libipni Find(%s): %v", x.pub.name, x.m.B58String(), err)
		}
		if d := checkFound(x.m, resp, x.want); d != "" {
			t.Errorf("%s: Find(%s): %s", x.pub.name, x.m.B58String(), d)
		}
	}
	// The metadata found decodes with go-libipni into the protocol built.
	for _, p := range pubs {
		for m, w := range p.want {
			resp, err := fc.Find(ctx, multihash.Multihash(m))
			if err != nil || len(resp.MultihashResults) != 1 || len(resp.MultihashResults[0].ProviderResults) != 1 {
				t.Fatalf("%s: Find: %v", p.name, err)
			}
			md := ipnimeta.Default.New()
			if err := md.UnmarshalBinary(resp.MultihashResults[0].ProviderResults[0].Metadata); err != nil {
				t.Errorf("%s: go-libipni cannot decode the metadata found: %v", p.name, err)
			} else if b, _ := md.MarshalBinary(); !bytes.Equal(b, w.meta) {
				t.Errorf("%s: metadata found decodes to %x, want %x", p.name, b, w.meta)
			}
			break
		}
	}

	// go-libipni's client reads the find port's /stats (model.Stats): the
	// memory store counts its entries, and EntriesEstimate is its size / 40.
	stats, err := fc.GetStats(ctx)
	if err != nil {
		t.Fatalf("go-libipni GetStats: %v", err)
	}
	if stats.EntriesCount != int64(len(all)) || stats.EntriesEstimate <= 0 {
		t.Errorf("go-libipni GetStats = %+v, want EntriesCount %d (every multihash advertised) and a positive EntriesEstimate", stats, len(all))
	}

	// An unknown multihash: the find API answers 404, which go-libipni's
	// client maps to an empty response and no error.
	unknown := mh("never advertised by anyone")
	resp, err := fc.Find(ctx, unknown)
	if err != nil {
		t.Errorf("go-libipni Find(unknown) error %v, want none (404 → empty response)", err)
	} else if len(resp.MultihashResults) != 0 || len(resp.EncryptedMultihashResults) != 0 {
		t.Errorf("go-libipni Find(unknown) = %+v, want an empty response", resp)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, findURL+"/multihash/"+unknown.B58String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	hr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, hr.Body)
	hr.Body.Close()
	if hr.StatusCode != http.StatusNotFound {
		t.Errorf("GET /multihash/<unknown>: %d, want 404", hr.StatusCode)
	}

	// Every provider is listed, with the publisher that announced it.
	provs, err := fc.ListProviders(ctx)
	if err != nil {
		t.Fatalf("go-libipni ListProviders: %v", err)
	}
	byID := map[peer.ID]*model.ProviderInfo{}
	for _, pi := range provs {
		byID[pi.AddrInfo.ID] = pi
	}
	for _, p := range pubs {
		var prov peer.ID
		for _, w := range p.want {
			prov = w.provider
			break
		}
		pi := byID[prov]
		if pi == nil {
			t.Errorf("%s: provider %s not listed", p.name, prov)
			continue
		}
		if pi.Publisher == nil || pi.Publisher.ID != p.id {
			t.Errorf("%s: provider %s has publisher %+v, want %s", p.name, prov, pi.Publisher, p.id)
		}
		if pi.Publisher != nil && !sameAddrs(pi.Publisher.Addrs, p.addrs) {
			t.Errorf("%s: provider %s has publisher addresses %v, want %v", p.name, prov, pi.Publisher.Addrs, p.addrs)
		}
		if !pi.LastAdvertisement.Equals(p.head) {
			t.Errorf("%s: provider %s LastAdvertisement %s, want %s", p.name, prov, pi.LastAdvertisement, p.head)
		}
	}
}
