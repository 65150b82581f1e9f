package sample_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// backends opens each store of the module, on disk where it has one.
func backends(t *testing.T) map[string]store.Store {
	t.Helper()
	p, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	l, err := leveldb.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20), pebble.WithDigestPrefixKeys())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]store.Store{"memory": memory.New(), "pebble": p, "pebble-digest-prefix": pp, "leveldb": l}
	t.Cleanup(func() {
		for _, s := range m {
			s.Close()
		}
	})
	return m
}

// server serves h on a mux as the indexer mounts it.
func server(t *testing.T, h http.Handler) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle(sample.Prefix, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	code   int
	ctype  string
	beacon string
	body   []byte
	cids   []string
}

func get(t *testing.T, base, path string) answer {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), beacon: resp.Header.Get(sample.BeaconHeader), body: body}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET %s: no Access-Control-Allow-Origin: *", path)
	}
	if a.code == http.StatusOK {
		var r sample.Response
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("GET %s: body %q: %v", path, body, err)
		}
		for _, l := range r.Samples {
			a.cids = append(a.cids, l.CID)
		}
	}
	return a
}

// inContext fails unless every CID names a multihash of want.
func inContext(t *testing.T, cids []string, want []multihash.Multihash) {
	t.Helper()
	for _, s := range cids {
		c, err := cid.Decode(s)
		if err != nil {
			t.Fatalf("sample %q: %v", s, err)
		}
		if c.Prefix().Codec != cid.Raw || c.Version() != 1 {
			t.Fatalf("sample %s is not a CIDv1 raw", s)
		}
		if !slices.ContainsFunc(want, func(mh multihash.Multihash) bool { return bytes.Equal(mh, c.Hash()) }) {
			t.Fatalf("sample %s names a multihash that was not put in the context", s)
		}
	}
	if len(cids) != len(slices.Compact(slices.Sorted(slices.Values(cids)))) {
		t.Fatalf("repeated samples: %v", cids)
	}
}

func TestSample(t *testing.T) {
	ctx := context.Background()
	prov := storetest.PeerID("sampled")
	// A context ID whose standard base64 has '+' and '/': "+/8=".
	bigCtx := []byte{0xfb, 0xff}
	big := storetest.Multihashes("big", 3000)
	smallCtx := []byte("small")
	small := storetest.Multihashes("small", 5)
	for name, st := range backends(t) {
		t.Run(name, func(t *testing.T) {
			if err := st.Put(ctx, store.Value{ProviderID: prov, ContextID: bigCtx, Metadata: []byte("m")}, big...); err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, store.Value{ProviderID: prov, ContextID: smallCtx, Metadata: []byte("m")}, small...); err != nil {
				t.Fatal(err)
			}
			h, err := sample.NewHandler(st)
			if err != nil {
				t.Fatal(err)
			}
			srv := server(t, h)
			base := srv.URL + sample.Prefix + prov.String() + "/"
			const b1 = "3439d92d58e47d342131d446a3abe264396dd264717897af30525c98408c834f"
			const b2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdee"

			first := get(t, base, "+/8=?max=10&beacon="+b1)
			if first.code != http.StatusOK || first.ctype != "application/json" || len(first.cids) != 10 {
				t.Fatalf("big context: %d %s %q", first.code, first.ctype, first.body)
			}
			inContext(t, first.cids, big)
			for _, path := range []string{"+/8?max=10&beacon=" + b1, "%2B%2F8%3D?max=10&beacon=" + b1, "-_8?max=10&beacon=" + b1, "-_8=?beacon=" + b1 + "&max=10&federation_epoch=0"} {
				if again := get(t, base, path); !slices.Equal(again.cids, first.cids) {
					t.Fatalf("%s: another sample for the same beacon: %v, want %v (%d %q)", path, again.cids, first.cids, again.code, again.body)
				}
			}
			if other := get(t, base, "+/8=?max=10&beacon="+b2); slices.Equal(other.cids, first.cids) || len(other.cids) != 10 {
				t.Fatalf("another beacon gave the same sample: %v", other.cids)
			} else {
				inContext(t, other.cids, big)
			}
			if one := get(t, base, "+/8=?beacon="+b1); len(one.cids) != 1 || one.cids[0] != first.cids[0] {
				t.Fatalf("default max: %v, want the first of %v", one.cids, first.cids)
			}
			random := get(t, base, "+/8=?max=3")
			if random.code != http.StatusOK || len(random.cids) != 3 || len(random.beacon) != 64 {
				t.Fatalf("no beacon: %d %v beacon %q", random.code, random.cids, random.beacon)
			}
			if again := get(t, base, "+/8=?max=3&beacon="+random.beacon); !slices.Equal(again.cids, random.cids) {
				t.Fatalf("the beacon in %s does not reproduce the answer: %v, want %v", sample.BeaconHeader, again.cids, random.cids)
			}

			// A small context is sampled whole: max 10 of 5 gives all 5.
			all := get(t, base, base64.StdEncoding.EncodeToString(smallCtx)+"?max=10&beacon=01")
			if len(all.cids) != len(small) {
				t.Fatalf("small context: %d samples, want all %d", len(all.cids), len(small))
			}
			inContext(t, all.cids, small)

			for _, path := range []string{"c21hbGx4", base64.StdEncoding.EncodeToString([]byte("none"))} {
				if a := get(t, base, path); a.code != http.StatusNotFound || !strings.Contains(errorBody(t, a), "no such provider and context ID") {
					t.Fatalf("unknown context %s: %d %s %q, want 404", path, a.code, a.ctype, a.body)
				}
			}
			other := srv.URL + sample.Prefix + storetest.PeerID("other").String() + "/"
			if a := get(t, other, "+/8="); a.code != http.StatusNotFound {
				t.Fatalf("unknown provider: %d %q, want 404", a.code, a.body)
			}
			if err := st.RemoveProviderContext(ctx, prov, bigCtx); err != nil {
				t.Fatal(err)
			}
			if a := get(t, base, "+/8="); a.code != http.StatusNotFound {
				t.Fatalf("removed context: %d %q, want 404", a.code, a.body)
			}
		})
	}
}

func TestBadRequest(t *testing.T) {
	h, err := sample.NewHandler(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	srv := server(t, h)
	prov := storetest.PeerID("p").String()
	for _, tc := range []struct{ path, want string }{
		{"notapeer/AAAA", "bad provider ID"},
		{prov, "want /ipni/v0/sample/{provider-id}/{context-id}"},
		{prov + "/", "missing context ID"},
		{prov + "/A!!A", "bad context ID"},
		{prov + "/A+_A", "mixes the standard"},
		{prov + "/AAA===", "bad base64 padding"},
		{prov + "/" + base64.StdEncoding.EncodeToString(make([]byte, 65)), "65 bytes, limit 64"},
		{prov + "/AAAA?beacon=xyz", "bad beacon \"xyz\": not hex"},
		{prov + "/AAAA?beacon=", "bad beacon: 0 bytes"},
		{prov + "/AAAA?beacon=" + strings.Repeat("00", 33), "bad beacon: 33 bytes"},
		{prov + "/AAAA?max=0", "bad max \"0\""},
		{prov + "/AAAA?max=11", "bad max \"11\""},
		{prov + "/AAAA?max=ten", "bad max \"ten\""},
		{prov + "/AAAA?federation_epoch=1", "bad federation_epoch \"1\""},
		{prov + "/" + strings.Repeat("A", 2000), "limit 1024"},
	} {
		a := get(t, srv.URL, sample.Prefix+tc.path)
		if msg := errorBody(t, a); a.code != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %s %q, want 400 with the spec's JSON error naming %q", tc.path, a.code, a.ctype, a.body, tc.want)
		}
	}
}

// errorBody returns the message of a's body, which must be the spec's
// JSON error (the OpenAPI file's error schema), {"error":"..."}.
func errorBody(t *testing.T, a answer) string {
	t.Helper()
	var e struct {
		Error *string `json:"error"`
	}
	if a.ctype != "application/json" || json.Unmarshal(a.body, &e) != nil || e.Error == nil || *e.Error == "" {
		t.Errorf("%d answer %s %q: not the spec's JSON error {\"error\":\"...\"}", a.code, a.ctype, a.body)
		return ""
	}
	return *e.Error
}

// noSampler hides the Sampler of the store it wraps.
type noSampler struct{ store.Store }

func TestNotImplemented(t *testing.T) {
	h, err := sample.NewHandler(noSampler{memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	a := get(t, server(t, h).URL, sample.Prefix+storetest.PeerID("p").String()+"/AAAA")
	if msg := errorBody(t, a); a.code != http.StatusNotImplemented || !strings.Contains(msg, "keeps no multihash populations") {
		t.Fatalf("%d %q, want 501 saying the store keeps no populations", a.code, a.body)
	}
}

func TestMethods(t *testing.T) {
	h, err := sample.NewHandler(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	u := server(t, h).URL + sample.Prefix + storetest.PeerID("p").String() + "/AAAA"
	req, _ := http.NewRequest(http.MethodOptions, u, nil)
	req.Header.Set("Origin", "https://example.org")
	req.Header.Set("Access-Control-Request-Method", "GET")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "GET") {
		t.Fatalf("OPTIONS: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = http.Post(u, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := answer{code: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: body}
	if msg := errorBody(t, a); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" || !strings.Contains(msg, "POST") {
		t.Fatalf("POST: %d %q, want 405 with Allow and a JSON error naming the method", resp.StatusCode, body)
	}
}

// The beacon's seed follows the spec's text: zero-padded to 32 bytes, the
// last 8 bytes of each 16-byte half, big-endian, are the high and low seed.
func TestSeed(t *testing.T) {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i + 1)
	}
	for _, tc := range []struct {
		beacon []byte
		hi, lo uint64
	}{
		{b, 0x090a0b0c0d0e0f10, 0x191a1b1c1d1e1f20},
		{b[:20], 0x090a0b0c0d0e0f10, 0},
		{[]byte{0xff}, 0, 0},
		{b[:12], 0x090a0b0c00000000, 0},
	} {
		if hi, lo := sample.Seed(tc.beacon); hi != tc.hi || lo != tc.lo {
			t.Errorf("Seed(%x) = %#x, %#x; want %#x, %#x", tc.beacon, hi, lo, tc.hi, tc.lo)
		}
	}
	if got := sample.Pick(b, 3, 10); len(got) != 3 || !slices.Equal(slices.Sorted(slices.Values(got)), []int{0, 1, 2}) {
		t.Fatalf("Pick of 10 from 3: %v, want each index once", got)
	}
	if !slices.Equal(sample.Pick(b, 1000, 5), sample.Pick(b, 1000, 5)) || slices.Equal(sample.Pick(b, 1000, 5), sample.Pick(b[:31], 1000, 5)) {
		t.Fatal("Pick is not a function of the beacon")
	}
}

func FuzzParseRequest(f *testing.F) {
	prov := storetest.PeerID("p").String()
	for _, s := range []string{prov + "/AAAA", prov + "/+/8=", prov + "/-_8", prov + "/%2B%2F8%3D", "x/y", "/", prov + "//", prov + "/AAA=="} {
		f.Add(s, "beacon=01&max=3")
	}
	f.Add(prov+"/AAAA", "federation_epoch=0&max=10&beacon="+strings.Repeat("ab", 32))
	f.Fuzz(func(t *testing.T, path, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		req, err := sample.ParseRequest(path, q)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error with no message")
			}
			return
		}
		if req.Provider.Validate() != nil || len(req.ContextID) > store.MaxContextIDLen ||
			req.Max < 1 || req.Max > sample.MaxSamples || (req.Beacon != nil && (len(req.Beacon) == 0 || len(req.Beacon) > sample.MaxBeacon)) {
			t.Fatalf("accepted %q %q as %+v", path, query, req)
		}
		// What was accepted reads back the same in the canonical form.
		canon := req.Provider.String() + "/" + url.PathEscape(base64.StdEncoding.EncodeToString(req.ContextID))
		back, err := sample.ParseRequest(canon, q)
		if err != nil || back.Provider != req.Provider || !bytes.Equal(back.ContextID, req.ContextID) {
			t.Fatalf("%q parsed to %x, its canonical form %q to %x, %v", path, req.ContextID, canon, back.ContextID, err)
		}
	})
}

// A context ID whose standard base64 starts with '/' ("//8=") reaches the
// handler whole when its slashes are escaped; sent raw, the mux would merge
// the two slashes (the package doc says so).
func TestEscapedSlashes(t *testing.T) {
	st := memory.New()
	prov := storetest.PeerID("p")
	mhs := storetest.Multihashes("slashes", 3)
	if err := st.Put(context.Background(), store.Value{ProviderID: prov, ContextID: []byte{0xff, 0xff}}, mhs...); err != nil {
		t.Fatal(err)
	}
	h, err := sample.NewHandler(st)
	if err != nil {
		t.Fatal(err)
	}
	base := server(t, h).URL + sample.Prefix + prov.String() + "/"
	var first []string
	for _, p := range []string{"%2F%2F8%3D", "%2F/8=", "__8"} {
		a := get(t, base, p+"?max=3&beacon=aa")
		if a.code != http.StatusOK || len(a.cids) != 3 {
			t.Fatalf("%s: %d %q", p, a.code, a.body)
		}
		inContext(t, a.cids, mhs)
		if first == nil {
			first = a.cids
		} else if !slices.Equal(first, a.cids) {
			t.Fatalf("%s: %v, want %v", p, a.cids, first)
		}
	}
}
