package routing_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

const (
	ccFound    = "public, max-age=300, stale-while-revalidate=60, stale-if-error=120"
	ccNotFound = "public, max-age=15, stale-while-revalidate=60, stale-if-error=120"
)

// record is a peer schema record as a client reads it.
type record struct {
	Schema    string
	ID        string
	Addrs     []string
	Protocols []string
	Graphsync *struct {
		PieceCID      string
		VerifiedDeal  bool
		FastRetrieval bool
	} `json:"transport-graphsync-filecoinv1"`
	Extra map[string]json.RawMessage `json:"-"`
}

func md(tb testing.TB, ps ...metadata.Protocol) []byte {
	tb.Helper()
	m, err := metadata.New(ps...)
	if err != nil {
		tb.Fatal(err)
	}
	return m.Encode()
}

func newHandler(tb testing.TB, b find.Backend, opts ...routing.Option) *routing.Handler {
	tb.Helper()
	h, err := routing.New(b, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// get serves one request on h and returns the recorder.
func get(h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeProviders(t *testing.T, body []byte) []record {
	t.Helper()
	var resp struct{ Providers []json.RawMessage }
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if resp.Providers == nil {
		t.Fatalf("body %q: no Providers array", body)
	}
	out := make([]record, len(resp.Providers))
	for i, raw := range resp.Providers {
		out[i] = decodeRecord(t, raw)
	}
	return out
}

func decodeRecord(t *testing.T, raw []byte) record {
	t.Helper()
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("record %s: %v", raw, err)
	}
	if err := json.Unmarshal(raw, &r.Extra); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Schema", "ID", "Addrs", "Protocols"} {
		delete(r.Extra, k)
	}
	return r
}

func providersPath(c cid.Cid) string { return routing.Prefix + "providers/" + c.String() }

// TestProvidersJSON checks a complete answer: per-peer union of addresses
// and protocols, the graphsync fields, unknown codes, metadata that does
// not decode, the cacheable headers, and one Find per request.
func TestProvidersJSON(t *testing.T) {
	p0, p1, p2 := testPeer(t, 0), testPeer(t, 1), testPeer(t, 2)
	piece := testCID(t, 99)
	a0 := maddrs(t, "/ip4/10.0.0.1/tcp/3000/http")
	a0b := maddrs(t, "/ip4/10.0.0.1/tcp/3000/http", "/dns4/p0.example.com/tcp/443/tls/http")
	b := &fakeBackend{results: []find.ProviderResult{
		{ContextID: []byte("a"), Metadata: md(t, metadata.Bitswap{}), Provider: &peer.AddrInfo{ID: p0, Addrs: a0}},
		{ContextID: []byte("x"), Metadata: []byte{0xff}, Provider: &peer.AddrInfo{ID: p1, Addrs: maddrs(t, "/ip4/10.0.0.2/udp/4001/quic-v1")}},
		{ContextID: []byte("b"), Metadata: md(t, metadata.GraphsyncFilecoinV1{PieceCID: piece, VerifiedDeal: true, FastRetrieval: true}), Provider: &peer.AddrInfo{ID: p0, Addrs: a0b}},
		{ContextID: []byte("c"), Metadata: md(t, metadata.Bitswap{}), Provider: &peer.AddrInfo{ID: p0, Addrs: a0}},
		{ContextID: []byte("d"), Metadata: md(t, metadata.IPFSGatewayHTTP{}, metadata.Unknown{Code: 0x3e0000, Payload: []byte("hi")}), Provider: &peer.AddrInfo{ID: p2}},
	}}
	h := newHandler(t, b)
	rec := get(h, providersPath(testCID(t, 1)))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/json", "Cache-Control": ccFound, "Vary": "Accept",
		"Access-Control-Allow-Origin": "*", find.HeaderBackends: "",
	} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	got := decodeProviders(t, rec.Body.Bytes())
	if len(got) != 3 {
		t.Fatalf("%d providers, want 3 (one per peer): %s", len(got), rec.Body)
	}
	r0, r1, r2 := got[0], got[1], got[2]
	if r0.ID != p0.String() || r1.ID != p1.String() || r2.ID != p2.String() {
		t.Fatalf("IDs %s %s %s, want %s %s %s in order first seen", r0.ID, r1.ID, r2.ID, p0, p1, p2)
	}
	for _, r := range got {
		if r.Schema != "peer" {
			t.Errorf("%s: Schema %q", r.ID, r.Schema)
		}
	}
	if want := []string{"transport-bitswap", "transport-graphsync-filecoinv1"}; !slices.Equal(r0.Protocols, want) {
		t.Errorf("p0 Protocols %q, want the union %q", r0.Protocols, want)
	}
	if want := []string{a0b[0].String(), a0b[1].String()}; !slices.Equal(r0.Addrs, want) {
		t.Errorf("p0 Addrs %q, want the union %q", r0.Addrs, want)
	}
	if g := r0.Graphsync; g == nil || g.PieceCID != piece.String() || !g.VerifiedDeal || !g.FastRetrieval {
		t.Errorf("p0 graphsync field %+v, want PieceCID %s, VerifiedDeal and FastRetrieval", g, piece)
	}
	if len(r1.Protocols) != 0 || len(r1.Extra) != 0 {
		t.Errorf("p1 (metadata that does not decode): Protocols %q, extra %v; want none", r1.Protocols, r1.Extra)
	}
	if want := []string{"transport-ipfs-gateway-http", "Code(4063232)"}; !slices.Equal(r2.Protocols, want) {
		t.Errorf("p2 Protocols %q, want %q", r2.Protocols, want)
	}
	if x := string(r2.Extra["Code(4063232)"]); x != `"aGk="` {
		t.Errorf("p2 unknown protocol field %s, want the payload in base64", x)
	}
	if len(r2.Addrs) != 0 {
		t.Errorf("p2 Addrs %q, want none", r2.Addrs)
	}
	if n := b.finds.Load(); n != 1 {
		t.Errorf("%d Finds for one request, want 1", n)
	}
}

// TestProvidersNotFound checks that "nothing found" is 200 with an empty
// list (the spec since IPIP-513), cacheable for the short time, in JSON and
// in a stream, with the filters leaving nothing too.
func TestProvidersNotFound(t *testing.T) {
	p0 := testPeer(t, 0)
	for name, b := range map[string]*fakeBackend{
		"empty":    {},
		"filtered": {results: []find.ProviderResult{{Metadata: md(t, metadata.Bitswap{}), Provider: &peer.AddrInfo{ID: p0, Addrs: maddrs(t, "/ip4/1.2.3.4/tcp/1")}}}},
	} {
		h := newHandler(t, b)
		path := providersPath(testCID(t, 1))
		if name == "filtered" {
			path += "?filter-protocols=transport-ipfs-gateway-http"
		}
		rec := get(h, path)
		if rec.Code != 200 || rec.Body.String() != `{"Providers":[]}` || rec.Header().Get("Cache-Control") != ccNotFound {
			t.Errorf("%s JSON: %d %q Cache-Control %q; want 200 {\"Providers\":[]} %q", name, rec.Code, rec.Body, rec.Header().Get("Cache-Control"), ccNotFound)
		}
		rec = get(h, path, "Accept", "application/x-ndjson")
		if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Cache-Control") != ccNotFound || rec.Header().Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("%s NDJSON: %d %q %v; want an empty 200 stream cached %q", name, rec.Code, rec.Body, rec.Header(), ccNotFound)
		}
	}
}

// TestProvidersPartial checks that an answer not every backend gave is
// never cacheable, and that nothing found on a partial lookup is not
// passed off as "no providers".
func TestProvidersPartial(t *testing.T) {
	p0 := testPeer(t, 0)
	one := []find.ProviderResult{{Metadata: md(t, metadata.Bitswap{}), Provider: &peer.AddrInfo{ID: p0}}}
	partial := &find.PartialError{Answered: 1, Total: 2, Err: errors.New("backend 2: connection refused")}
	timedOut := &find.PartialError{Answered: 1, Total: 3, TimedOut: 2, Err: context.DeadlineExceeded}
	for _, tc := range []struct {
		name     string
		b        *fakeBackend
		accept   string
		status   int
		cc       string
		backends string
	}{
		{"results+partial", &fakeBackend{results: one, err: partial}, "", 200, "no-store", "1/2"},
		{"results+error", &fakeBackend{results: one, err: errors.New("boom")}, "", 200, "no-store", ""},
		{"nothing+partial", &fakeBackend{err: partial}, "", 502, "no-store", "1/2"},
		{"nothing+timeouts", &fakeBackend{err: timedOut}, "", 504, "no-store", "1/3"},
		{"nothing+error", &fakeBackend{err: errors.New("boom")}, "", 500, "no-store", ""},
		{"filtered+partial", &fakeBackend{results: one, err: partial}, "", 502, "no-store", "1/2"},
		{"stream+partial", &fakeBackend{results: one, err: partial}, "application/x-ndjson", 200, "no-store", "1/2"},
		{"stream complete", &fakeBackend{results: one}, "application/x-ndjson", 200, "no-store", ""},
		{"stream nothing+partial", &fakeBackend{err: partial}, "application/x-ndjson", 502, "no-store", "1/2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandler(t, tc.b)
			path := providersPath(testCID(t, 1))
			if strings.HasPrefix(tc.name, "filtered") {
				path += "?filter-protocols=transport-ipfs-gateway-http"
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body) // the trailer is read with the body
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != tc.cc {
				t.Errorf("Cache-Control %q, want %q: a partial answer must not be cached as complete", cc, tc.cc)
			}
			got := resp.Header.Get(find.HeaderBackends) + resp.Trailer.Get(find.HeaderBackends)
			if got != tc.backends {
				t.Errorf("%s %q, want %q", find.HeaderBackends, got, tc.backends)
			}
		})
	}
}

// TestProvidersStream checks that NDJSON lines leave as the backend yields
// them, that a peer is sent again only when its union grew, and never the
// same line twice.
func TestProvidersStream(t *testing.T) {
	p0, p1 := testPeer(t, 0), testPeer(t, 1)
	a := maddrs(t, "/ip4/10.0.0.1/tcp/3000")
	bs, gw := md(t, metadata.Bitswap{}), md(t, metadata.IPFSGatewayHTTP{})
	b := &fakeBackend{gate: make(chan struct{}), results: []find.ProviderResult{
		{ContextID: []byte("1"), Metadata: bs, Provider: &peer.AddrInfo{ID: p0, Addrs: a}},
		{ContextID: []byte("2"), Metadata: bs, Provider: &peer.AddrInfo{ID: p0, Addrs: a}},                                                    // nothing new
		{ContextID: []byte("3"), Metadata: bs, Provider: &peer.AddrInfo{ID: p1, Addrs: a}},                                                    // a new peer
		{ContextID: []byte("4"), Metadata: gw, Provider: &peer.AddrInfo{ID: p0, Addrs: a}},                                                    // p0 grows
		{ContextID: []byte("5"), Metadata: md(t, metadata.Bitswap{}, metadata.IPFSGatewayHTTP{}), Provider: &peer.AddrInfo{ID: p0, Addrs: a}}, // nothing new
	}}
	srv := httptest.NewServer(newHandler(t, b))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+providersPath(testCID(t, 1)), nil)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/x-ndjson" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	// The backend holds the rest until the first line has arrived.
	if !sc.Scan() {
		t.Fatalf("no first line: %v", sc.Err())
	}
	lines := []record{decodeRecord(t, sc.Bytes())}
	close(b.gate)
	for sc.Scan() {
		lines = append(lines, decodeRecord(t, sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	type line struct {
		id     peer.ID
		protos []string
	}
	want := []line{{p0, []string{"transport-bitswap"}}, {p1, []string{"transport-bitswap"}}, {p0, []string{"transport-bitswap", "transport-ipfs-gateway-http"}}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines %+v, want %d: a peer is sent again only when its union grows", len(lines), lines, len(want))
	}
	for i, w := range want {
		if lines[i].ID != w.id.String() || !slices.Equal(lines[i].Protocols, w.protos) {
			t.Errorf("line %d: %s %q, want %s %q", i, lines[i].ID, lines[i].Protocols, w.id, w.protos)
		}
	}
}

// TestFilters checks filter-addrs and filter-protocols as the spec
// (IPIP-484) words them.
func TestFilters(t *testing.T) {
	p0, p1, p2 := testPeer(t, 0), testPeer(t, 1), testPeer(t, 2)
	b := &fakeBackend{results: []find.ProviderResult{
		{Metadata: md(t, metadata.Bitswap{}), Provider: &peer.AddrInfo{ID: p0, Addrs: maddrs(t, "/ip4/10.0.0.1/tcp/4001", "/ip6/::1/udp/4001/quic-v1", "/dns4/x.example.com/tcp/443/tls/http")}},
		{Metadata: md(t, metadata.IPFSGatewayHTTP{}), Provider: &peer.AddrInfo{ID: p1, Addrs: maddrs(t, "/ip4/10.0.0.2/tcp/443/tls/http")}},
		{Metadata: []byte{0xff}, Provider: &peer.AddrInfo{ID: p2}}, // no protocols, no addresses
	}}
	h := newHandler(t, b)
	type got struct {
		id    string
		addrs int
	}
	for _, tc := range []struct {
		query string
		want  []got
	}{
		{"", []got{{p0.String(), 3}, {p1.String(), 1}, {p2.String(), 0}}},
		{"filter-protocols=transport-bitswap", []got{{p0.String(), 3}}},
		{"filter-protocols=TRANSPORT-IPFS-GATEWAY-HTTP,unknown", []got{{p1.String(), 1}, {p2.String(), 0}}},
		{"filter-protocols=unknown", []got{{p2.String(), 0}}},
		{"filter-protocols=", []got{}},
		{"filter-addrs=tcp", []got{{p0.String(), 2}, {p1.String(), 1}}},
		{"filter-addrs=!ip6", []got{{p0.String(), 2}, {p1.String(), 1}}},
		{"filter-addrs=!ip6,!tls", []got{{p0.String(), 1}}},
		{"filter-addrs=quic-v1,unknown", []got{{p0.String(), 1}, {p2.String(), 0}}},
		{"filter-addrs=unknown", []got{{p2.String(), 0}}},
		{"filter-addrs=http,!dns4&filter-protocols=transport-bitswap,transport-ipfs-gateway-http", []got{{p1.String(), 1}}},
		{"filter-addrs=tcp%2C!tls", []got{{p0.String(), 1}}},
		{"other=1", []got{{p0.String(), 3}, {p1.String(), 1}, {p2.String(), 0}}},
	} {
		rec := get(h, providersPath(testCID(t, 1))+"?"+tc.query)
		if rec.Code != 200 {
			t.Errorf("%q: status %d: %s", tc.query, rec.Code, rec.Body)
			continue
		}
		var gots []got
		for _, r := range decodeProviders(t, rec.Body.Bytes()) {
			gots = append(gots, got{r.ID, len(r.Addrs)})
		}
		if !slices.Equal(gots, tc.want) && !(len(gots) == 0 && len(tc.want) == 0) {
			t.Errorf("%q: %v, want %v", tc.query, gots, tc.want)
		}
	}
}

// TestBadInput checks the client errors: a CID, peer ID or query that
// does not conform to the spec's schema gets 422 (the spec's status for
// /providers and /peers, which Helia's client reports as an invalid
// request), an unknown path 400 (the spec's Error Codes); each names the
// problem in a text/plain body, and none asks the backend anything.
func TestBadInput(t *testing.T) {
	b := &fakeBackend{}
	h := newHandler(t, b)
	good := testCID(t, 1).String()
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{routing.Prefix + "providers/", "empty CID", 422},
		{routing.Prefix + "providers/notacid", "bad CID \"notacid\"", 422},
		{routing.Prefix + "providers/#abc", "unsupported multibase prefix \"#\"", 422},
		{routing.Prefix + "providers/bafyfoo", "not a valid CID", 422},
		{routing.Prefix + "providers/" + strings.Repeat("b", 1100), "path longer than 1024 bytes", 422},
		{routing.Prefix + "peers/nope", "bad peer ID \"nope\"", 422},
		{routing.Prefix + "peers/" + good, "not a valid peer ID", 422},
		{routing.Prefix + "peers/" + strings.Repeat("1", 1100), "path longer than 1024 bytes", 422},
		{routing.Prefix + "nonsense", "unknown path \"nonsense\"", 400},
		{routing.Prefix + strings.Repeat("x", 1100), "path longer than 1024 bytes", 400},
		{routing.Prefix + "providers/" + good + "?filter-addrs=tcp,bogus", "filter-addrs: \"bogus\" is not a multiaddr protocol name", 422},
		{routing.Prefix + "providers/" + good + "?filter-addrs=!unknown", "\"unknown\" cannot be negated", 422},
		{routing.Prefix + "providers/" + good + "?filter-protocols=!transport-bitswap", "negative filters are defined for filter-addrs only", 422},
		{routing.Prefix + "providers/" + good + "?filter-protocols=" + strings.Repeat("x", 64), "longer than 63 characters", 422},
		{routing.Prefix + "providers/" + good + "?filter-protocols=a%00b", "not printable ASCII", 422},
		{routing.Prefix + "providers/" + good + "?filter-addrs=tcp&filter-addrs=udp", "filter-addrs given 2 times", 422},
		{routing.Prefix + "providers/" + good + "?filter-addrs=%zz", "bad query", 422},
		{routing.Prefix + "providers/" + good + "?x=" + strings.Repeat("y", 5000), "query longer than 4096 bytes", 422},
		{routing.Prefix + "peers/" + testPeer(t, 1).String() + "?filter-addrs=bogus", "\"bogus\" is not a multiaddr protocol name", 422},
	} {
		rec := get(h, tc.path)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
			t.Errorf("%.80s: %d %q (%s), want %d naming %q", tc.path, rec.Code, rec.Body, rec.Header().Get("Content-Type"), tc.code, tc.want)
		}
		if rec.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%.80s: no Access-Control-Allow-Origin: *, a browser client could not read the message", tc.path)
		}
	}
	if n := b.finds.Load() + b.providers.Load(); n != 0 {
		t.Errorf("bad requests made %d backend lookups, want 0", n)
	}
}

// TestLastModified checks that every 200 of /providers and /peers, JSON
// or NDJSON, found or not, carries Last-Modified, an HTTP-date of the
// resolution (the spec's response headers), and that errors do not.
// It runs a real HTTP server over a store backend.
func TestLastModified(t *testing.T) {
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	prov := testPeer(t, 7)
	c := testCID(t, 7)
	ctx := context.Background()
	if err := st.Put(ctx, store.Value{ProviderID: prov, ContextID: []byte("ctx"), Metadata: md(t, metadata.Bitswap{})}, c.Hash()); err != nil {
		t.Fatal(err)
	}
	if err := st.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: prov, Addrs: maddrs(t, "/ip4/127.0.0.1/tcp/4001")}}); err != nil {
		t.Fatal(err)
	}
	b, err := find.NewStoreBackend(st)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newHandler(t, b))
	t.Cleanup(srv.Close)
	before := time.Now().Add(-time.Second)
	for _, tc := range []struct{ path, accept string }{
		{providersPath(c), "application/json"},
		{providersPath(c), "application/x-ndjson"},
		{providersPath(testCID(t, 8)), "application/json"},
		{providersPath(testCID(t, 8)), "application/x-ndjson"},
		{routing.Prefix + "peers/" + prov.String(), "application/json"},
		{routing.Prefix + "peers/" + prov.String(), "application/x-ndjson"},
		{routing.Prefix + "peers/" + testPeer(t, 8).String(), "application/json"},
		{routing.Prefix + "peers/" + testPeer(t, 8).String(), "application/x-ndjson"},
	} {
		req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
		req.Header.Set("Accept", tc.accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lm := resp.Header.Get("Last-Modified")
		at, err := http.ParseTime(lm)
		if resp.StatusCode != 200 || err != nil || at.Before(before.Truncate(time.Second)) || at.After(time.Now()) {
			t.Errorf("%s (%s): %d, Last-Modified %q (%v), want 200 with an HTTP-date of now", tc.path, tc.accept, resp.StatusCode, lm, err)
		}
	}
	resp, err := http.Get(srv.URL + routing.Prefix + "providers/notacid")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || resp.Header.Get("Last-Modified") != "" || !strings.Contains(string(body), "bad CID") {
		t.Errorf("a bad CID over HTTP: %d %q, Last-Modified %q; want 422 naming the CID, no Last-Modified", resp.StatusCode, body, resp.Header.Get("Last-Modified"))
	}
}

// TestMethods checks CORS preflights, the spec's 501s and 406.
func TestMethods(t *testing.T) {
	h := newHandler(t, &fakeBackend{})
	path := providersPath(testCID(t, 1))
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"OPTIONS", path, 204},
		{"PUT", path, 501},
		{"PUT", routing.Prefix + "providers", 501},
		{"PUT", routing.Prefix + "peers", 501},
		{"GET", routing.Prefix + "ipns/k51abc", 501},
		{"GET", routing.Prefix + "dht/closest/peers/abc", 501},
		{"DELETE", path, 501},
		{"HEAD", path, 200},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s %s: %d %v, want %d with CORS", tc.method, tc.path, rec.Code, rec.Header(), tc.status)
		}
		if tc.method == "OPTIONS" && rec.Header().Get("Access-Control-Allow-Methods") != "GET, HEAD, OPTIONS" {
			t.Errorf("preflight Access-Control-Allow-Methods %q", rec.Header().Get("Access-Control-Allow-Methods"))
		}
	}
	if rec := get(h, path, "Accept", "text/html"); rec.Code != 406 {
		t.Errorf("Accept: text/html: %d, want 406", rec.Code)
	}
}

// TestJSONLimit checks that a JSON answer holds at most the limit.
func TestJSONLimit(t *testing.T) {
	b := &fakeBackend{}
	for i := range 5 {
		b.results = append(b.results, find.ProviderResult{Metadata: md(t, metadata.Bitswap{}), Provider: &peer.AddrInfo{ID: testPeer(t, i)}})
	}
	h := newHandler(t, b, routing.WithJSONLimit(3))
	if got := decodeProviders(t, get(h, providersPath(testCID(t, 1))).Body.Bytes()); len(got) != 3 {
		t.Errorf("%d providers, want the limit 3", len(got))
	}
	rec := get(h, providersPath(testCID(t, 1)), "Accept", "application/x-ndjson")
	if n := strings.Count(rec.Body.String(), "\n"); n != 5 {
		t.Errorf("stream of %d lines, want all 5", n)
	}
}

// TestPeers checks GET /routing/v1/peers/{peer-id} from provider records.
func TestPeers(t *testing.T) {
	p0 := testPeer(t, 0)
	info := find.ProviderInfo{AddrInfo: peer.AddrInfo{ID: p0, Addrs: maddrs(t, "/ip4/10.0.0.1/tcp/3000/http")}}
	pidCID := peer.ToCid(p0).String()
	for _, tc := range []struct {
		name   string
		b      *fakeBackend
		key    string
		accept string
		status int
		body   string
		cc     string
	}{
		{"found", &fakeBackend{provider: info}, p0.String(), "", 200,
			`{"Peers":[{"Schema":"peer","ID":"` + p0.String() + `","Addrs":["/ip4/10.0.0.1/tcp/3000/http"]}]}`, ccFound},
		{"found by CID", &fakeBackend{provider: info}, pidCID, "", 200,
			`{"Peers":[{"Schema":"peer","ID":"` + p0.String() + `","Addrs":["/ip4/10.0.0.1/tcp/3000/http"]}]}`, ccFound},
		{"found stream", &fakeBackend{provider: info}, p0.String(), "application/x-ndjson", 200,
			`{"Schema":"peer","ID":"` + p0.String() + `","Addrs":["/ip4/10.0.0.1/tcp/3000/http"]}` + "\n", ccFound},
		{"not found", &fakeBackend{}, p0.String(), "", 200, `{"Peers":[]}`, ccNotFound},
		{"partial", &fakeBackend{provider: info, providerErr: &find.PartialError{Answered: 1, Total: 2}}, p0.String(), "", 200,
			`{"Peers":[{"Schema":"peer","ID":"` + p0.String() + `","Addrs":["/ip4/10.0.0.1/tcp/3000/http"]}]}`, "no-store"},
		{"partial not found", &fakeBackend{providerErr: &find.PartialError{Answered: 1, Total: 2, Err: find.ErrNotFound}}, p0.String(), "", 502, "", "no-store"},
	} {
		b := tc.b
		rec := get(newHandler(t, b), routing.Prefix+"peers/"+tc.key, "Accept", tc.accept)
		if rec.Code != tc.status || (tc.body != "" && rec.Body.String() != tc.body) || rec.Header().Get("Cache-Control") != tc.cc {
			t.Errorf("%s: %d %q Cache-Control %q; want %d %q %q", tc.name, rec.Code, rec.Body, rec.Header().Get("Cache-Control"), tc.status, tc.body, tc.cc)
		}
		if n := b.providers.Load(); n != 1 {
			t.Errorf("%s: %d Provider calls, want 1", tc.name, n)
		}
	}
}

// TestNew checks the constructor's validation.
func TestNew(t *testing.T) {
	for name, opts := range map[string][]routing.Option{
		"logger": {routing.WithLogger(nil)}, "max-age": {routing.WithMaxAge(0, 0)},
		"limit": {routing.WithJSONLimit(0)}, "timeout": {routing.WithStreamWriteTimeout(0)},
	} {
		if _, err := routing.New(&fakeBackend{}, opts...); !errors.Is(err, routing.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := routing.New(nil); !errors.Is(err, routing.ErrInvalidOption) {
		t.Errorf("nil backend: %v", err)
	}
	h := newHandler(t, &fakeBackend{}, routing.WithMaxAge(time.Hour, 0))
	if cc := get(h, providersPath(testCID(t, 1))).Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("not-found max-age 0: Cache-Control %q, want no-cache", cc)
	}
}
