package piece_test

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multibase"

	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/memory"
	"github.com/indexkit/indexkit/piece/piecetest"
)

type fixture struct {
	srv    *httptest.Server
	store  *memory.Store
	server peer.ID
	p      peer.ID
	pc     cid.Cid
	kept   []cid.Cid
}

func newFixture(t *testing.T, opts ...piece.HandlerOption) *fixture {
	t.Helper()
	st, err := memory.New(memory.WithCapacity(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := piece.NewHandler(st, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h) // 127.0.0.1
	t.Cleanup(srv.Close)
	id, _ := peer.IDFromPrivateKey(key)
	f := &fixture{srv: srv, store: st, server: id, p: piecetest.Provider(1), pc: piecetest.PieceCID(1)}
	if err := st.AddPayloads(t.Context(), f.p, f.pc, piecetest.Payloads(0, 30)...); err != nil {
		t.Fatal(err)
	}
	f.kept, _ = st.Payloads(t.Context(), f.p, f.pc)
	return f
}

func (f *fixture) get(t *testing.T, path string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func samplePath(p peer.ID, pc cid.Cid, seed string, extra string) string {
	return "/sample/" + p.String() + "/" + pc.String() + "?seed=" + url.QueryEscape(seed) + extra
}

func TestSampleSignedAndDeterministic(t *testing.T) {
	f := newFixture(t)
	seen := map[cid.Cid]bool{}
	for i := range 40 {
		seed := "round-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		code, hdr, body := f.get(t, samplePath(f.p, f.pc, seed, ""))
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		if hdr.Get("Cache-Control") != "no-store" || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("headers: Cache-Control %q, Content-Type %q", hdr.Get("Cache-Control"), hdr.Get("Content-Type"))
		}
		v, err := piece.VerifySample(body, f.p, f.pc, seed, piece.WithServer(f.server))
		if err != nil {
			t.Fatalf("VerifySample: %v\nbody %s", err, body)
		}
		if len(v.Samples) != 1 || v.Error != "" || v.Server != f.server {
			t.Fatalf("verified %+v", v)
		}
		if !slices.Contains(f.kept, v.Samples[0]) {
			t.Fatalf("sample %s is not a kept payload", v.Samples[0])
		}
		if want := piece.Choose(f.kept, seed, 1); !slices.Equal(v.Samples, want) {
			t.Fatalf("sample %v, want Choose = %v", v.Samples, want)
		}
		seen[v.Samples[0]] = true
		// Same seed, same answer, byte for byte (Ed25519 is deterministic).
		_, _, again := f.get(t, samplePath(f.p, f.pc, seed, ""))
		if string(again) != string(body) {
			t.Fatalf("same seed, different answers:\n%s\n%s", body, again)
		}
	}
	if len(seen) < 4 {
		t.Errorf("40 seeds chose only %d distinct payloads of %d", len(seen), len(f.kept))
	}
}

func TestSampleN(t *testing.T) {
	f := newFixture(t, piece.WithMaxSamples(10))
	code, _, body := f.get(t, samplePath(f.p, f.pc, "s", "&n=3"))
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	v, err := piece.VerifySample(body, f.p, f.pc, "s")
	if err != nil {
		t.Fatal(err)
	}
	if want := piece.Choose(f.kept, "s", 3); !slices.Equal(v.Samples, want) || len(want) != 3 {
		t.Errorf("n=3: %v, want %v", v.Samples, want)
	}
	// n above the kept count returns all kept, in seed order.
	_, _, body = f.get(t, samplePath(f.p, f.pc, "s", "&n=10"))
	v, err = piece.VerifySample(body, f.p, f.pc, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Samples) != len(f.kept) {
		t.Errorf("n=10 with %d kept: %d samples", len(f.kept), len(v.Samples))
	}
	for _, bad := range []string{"&n=0", "&n=11", "&n=x", "&n=1&n=2", "&n=-1"} {
		if code, _, body := f.get(t, samplePath(f.p, f.pc, "s", bad)); code != http.StatusBadRequest || !strings.Contains(string(body), piece.CodeInvalidN) {
			t.Errorf("%s: %d %s, want 400 %s", bad, code, body, piece.CodeInvalidN)
		}
	}
}

func TestSampleNotFoundSigned(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		p    peer.ID
		pc   cid.Cid
		code string
	}{
		{piecetest.Provider(99), f.pc, piece.CodeProviderNotFound},
		{f.p, piecetest.PieceCID(99), piece.CodePieceNotFound},
	} {
		code, hdr, body := f.get(t, samplePath(tc.p, tc.pc, "seed", ""))
		if code != http.StatusNotFound {
			t.Fatalf("status %d, want 404: %s", code, body)
		}
		if hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("404 Cache-Control %q, want no-store", hdr.Get("Cache-Control"))
		}
		v, err := piece.VerifySample(body, tc.p, tc.pc, "seed", piece.WithServer(f.server))
		if err != nil {
			t.Fatalf("VerifySample(404): %v\n%s", err, body)
		}
		if v.Error != tc.code || v.Samples != nil {
			t.Errorf("verified %+v, want error %s", v, tc.code)
		}
	}
}

func TestSampleBadRequests(t *testing.T) {
	f := newFixture(t)
	p, pc := f.p.String(), f.pc.String()
	for _, tc := range []struct{ path, code, mention string }{
		{"/sample/notapeer/" + pc + "?seed=1", piece.CodeInvalidProviderID, "notapeer"},
		{"/sample/" + pc + "/" + pc + "?seed=1", piece.CodeInvalidProviderID, "providerId"},
		{"/sample/" + p + "/notacid?seed=1", piece.CodeInvalidPieceCID, "notacid"},
		{"/sample/" + p + "/" + pc, piece.CodeInvalidSeed, "seed is required"},
		{"/sample/" + p + "/" + pc + "?seed=", piece.CodeInvalidSeed, "empty"},
		{"/sample/" + p + "/" + pc + "?seed=a%22b", piece.CodeInvalidSeed, "printable ASCII"},
		{"/sample/" + p + "/" + pc + "?seed=%zz", piece.CodeInvalidSeed, "URL-encoded"},
		{"/sample/" + p + "/" + pc + "?seed=a&seed=b", piece.CodeInvalidSeed, "more than once"},
		{"/sample/" + p + "/" + pc + "?seed=" + strings.Repeat("a", piece.MaxSeedLen+1), piece.CodeInvalidSeed, "bytes long"},
	} {
		code, _, body := f.get(t, tc.path)
		var e struct{ Error, Detail string }
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("%s: body %q is not JSON: %v", tc.path, body, err)
			continue
		}
		if code != http.StatusBadRequest || e.Error != tc.code || !strings.Contains(e.Detail, tc.mention) {
			t.Errorf("%s: %d %+v, want 400 %s mentioning %q", tc.path, code, e, tc.code, tc.mention)
		}
	}
	if code, _, _ := f.get(t, "/sample/"+p); code != http.StatusNotFound {
		t.Errorf("/sample/{p} without a piece: %d, want 404", code)
	}
	resp, err := http.Post(f.srv.URL+samplePath(f.p, f.pc, "s", ""), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// TestSampleCanonicalIDs: the path may carry the provider in CID form and
// the piece in another multibase; the signature covers the canonical forms,
// so VerifySample with the parsed values accepts the answer.
func TestSampleCanonicalIDs(t *testing.T) {
	f := newFixture(t)
	pc58, err := f.pc.StringOfBase(multibase.Base58BTC)
	if err != nil {
		t.Fatal(err)
	}
	path := "/sample/" + peer.ToCid(f.p).String() + "/" + pc58 + "?seed=abc"
	code, _, body := f.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	if _, err := piece.VerifySample(body, f.p, f.pc, "abc"); err != nil {
		t.Fatalf("VerifySample: %v", err)
	}
	_, _, canonical := f.get(t, samplePath(f.p, f.pc, "abc", ""))
	if string(body) != string(canonical) {
		t.Errorf("answers differ by ID encoding:\n%s\n%s", body, canonical)
	}
}

func TestVerifyRejectsTampering(t *testing.T) {
	f := newFixture(t)
	_, _, body := f.get(t, samplePath(f.p, f.pc, "seed-1", "&n=2"))
	var r piece.SampleResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	other, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	otherID, _ := peer.IDFromPrivateKey(other)
	otherPub, _ := piece.EncodePubKey(other.GetPublic())
	swapped := r
	swapped.Samples = []string{r.Samples[1], r.Samples[0]}
	replaced := r
	replaced.Samples = []string{f.kept[len(f.kept)-1].String(), r.Samples[1]}
	foreign := r
	foreign.PubKey = otherPub
	for _, tc := range []struct {
		name     string
		r        piece.SampleResponse
		p        peer.ID
		pc       cid.Cid
		seed     string
		opts     []piece.VerifyOption
		wantErr  error
		wantText string
	}{
		{"other seed", r, f.p, f.pc, "seed-2", nil, piece.ErrBadSignature, ""},
		{"other provider", r, piecetest.Provider(2), f.pc, "seed-1", nil, piece.ErrBadSignature, ""},
		{"other piece", r, f.p, piecetest.PieceCID(2), "seed-1", nil, piece.ErrBadSignature, ""},
		{"samples reordered", swapped, f.p, f.pc, "seed-1", nil, piece.ErrBadSignature, ""},
		{"sample replaced", replaced, f.p, f.pc, "seed-1", nil, piece.ErrBadSignature, ""},
		{"foreign pubkey", foreign, f.p, f.pc, "seed-1", nil, piece.ErrBadSignature, ""},
		{"unexpected server", r, f.p, f.pc, "seed-1", []piece.VerifyOption{piece.WithServer(otherID)}, piece.ErrUnexpectedServer, ""},
		{"error and samples", piece.SampleResponse{Samples: r.Samples, Error: piece.CodePieceNotFound, PubKey: r.PubKey, Signature: r.Signature}, f.p, f.pc, "seed-1", nil, nil, "both"},
		{"unknown code", piece.SampleResponse{Error: "NOPE", PubKey: r.PubKey, Signature: r.Signature}, f.p, f.pc, "seed-1", nil, nil, "unknown error code"},
		{"bad seed", r, f.p, f.pc, "", nil, nil, "seed is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.r.Verify(tc.p, tc.pc, tc.seed, tc.opts...)
			switch {
			case err == nil:
				t.Fatal("verified")
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			case tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText):
				t.Fatalf("err = %v, want it to mention %q", err, tc.wantText)
			}
		})
	}
	if _, err := r.Verify(f.p, f.pc, "seed-1", piece.WithServer(f.server)); err != nil {
		t.Fatalf("untampered: %v", err)
	}
	for _, bad := range []string{"", "{}", "[]", `{"samples":["x"],"pubkey":"","signature":""}`, string(body) + "{}", `{"samples":[],"pubkey":"a","signature":"b","extra":1}`} {
		if _, err := piece.VerifySample([]byte(bad), f.p, f.pc, "seed-1"); err == nil {
			t.Errorf("VerifySample(%q): no error", bad)
		}
	}
}

func TestIngestionStatus(t *testing.T) {
	f := newFixture(t)
	head, last := piecetest.CID("head"), piecetest.CID("last")
	addr, text, lastErr := "http://127.0.0.1:3104", "walking", "fetch ad: 503"
	if err := f.store.UpdateStatus(t.Context(), f.p, piece.StatusUpdate{
		Add:     piece.Counters{AdsWalked: 7, AdsWithoutPiece: 2, EntriesUnretrievable: 1},
		Address: &addr, Text: &text, LastError: &lastErr, LastHead: &last, Head: &head,
	}); err != nil {
		t.Fatal(err)
	}
	code, hdr, body := f.get(t, "/ingestion-status/"+f.p.String())
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s %s", code, hdr.Get("Content-Type"), body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"providerId": f.p.String(), "providerAddress": addr, "ingestionStatus": text,
		"lastHeadWalkedFrom": last.String(), "piecesIndexed": 1.0, "adsWalked": 7.0,
		"adsMissingPieceCID": 2.0, "entriesNotRetrievable": 1.0, "lastError": lastErr,
		"walkInProgressHead": head.String(),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if _, ok := got["updated"].(string); !ok {
		t.Errorf("updated = %v, want an RFC 3339 string", got["updated"])
	}

	// No walk in progress: null.
	undef := cid.Undef
	_ = f.store.UpdateStatus(t.Context(), f.p, piece.StatusUpdate{Head: &undef})
	_, _, body = f.get(t, "/ingestion-status/"+f.p.String())
	if !strings.Contains(string(body), `"walkInProgressHead":null`) {
		t.Errorf("no walk in progress: %s", body)
	}

	unknown := piecetest.Provider(42)
	code, _, body = f.get(t, "/ingestion-status/"+unknown.String())
	if code != http.StatusNotFound || !strings.Contains(string(body), piece.CodeProviderNotFound) || !strings.Contains(string(body), unknown.String()) {
		t.Errorf("unknown provider: %d %s, want 404 naming it", code, body)
	}
	code, _, body = f.get(t, "/ingestion-status/nope")
	if code != http.StatusBadRequest || !strings.Contains(string(body), piece.CodeInvalidProviderID) {
		t.Errorf("bad provider ID: %d %s", code, body)
	}

	// A failing store is a 500, not a 404.
	_ = f.store.Close()
	if code, _, body := f.get(t, "/ingestion-status/"+f.p.String()); code != http.StatusInternalServerError {
		t.Errorf("closed store, status: %d %s, want 500", code, body)
	}
	if code, _, body := f.get(t, samplePath(f.p, f.pc, "s", "")); code != http.StatusInternalServerError {
		t.Errorf("closed store, sample: %d %s, want 500", code, body)
	}
}

func TestNewHandlerValidates(t *testing.T) {
	st, _ := memory.New()
	key, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	if _, err := piece.NewHandler(nil, key); err == nil {
		t.Error("nil store: no error")
	}
	if _, err := piece.NewHandler(st, nil); err == nil {
		t.Error("nil key: no error")
	}
	for _, n := range []int{0, 1025} {
		if _, err := piece.NewHandler(st, key, piece.WithMaxSamples(n)); err == nil {
			t.Errorf("WithMaxSamples(%d): no error", n)
		}
	}
	if _, err := piece.NewHandler(st, key, piece.WithLogger(nil)); err == nil {
		t.Error("WithLogger(nil): no error")
	}
}

func TestChoose(t *testing.T) {
	kept := piecetest.Payloads(0, 10)
	a := piece.Choose(kept, "x", 10)
	if len(a) != 10 {
		t.Fatalf("Choose all: %d", len(a))
	}
	sorted := slices.Clone(a)
	slices.SortFunc(sorted, func(x, y cid.Cid) int { return strings.Compare(x.KeyString(), y.KeyString()) })
	ref := slices.Clone(kept)
	slices.SortFunc(ref, func(x, y cid.Cid) int { return strings.Compare(x.KeyString(), y.KeyString()) })
	if !slices.Equal(sorted, ref) {
		t.Error("Choose(all) is not a permutation of kept")
	}
	if b := piece.Choose(kept, "x", 3); !slices.Equal(b, a[:3]) {
		t.Error("Choose(n) is not a prefix of Choose(all)")
	}
	if len(piece.Choose(nil, "x", 3)) != 0 || len(piece.Choose(kept, "x", 0)) != 0 {
		t.Error("Choose of nothing returned something")
	}
	// Roughly uniform: over 2,000 seeds every payload is chosen first
	// between 100 and 300 times (expected 200; a loose bound, not a timing).
	counts := map[cid.Cid]int{}
	for i := range 2000 {
		counts[piece.Choose(kept, "seed-"+strconv.Itoa(i), 1)[0]]++
	}
	for _, c := range kept {
		if n := counts[c]; n < 100 || n > 300 {
			t.Errorf("payload %s chosen %d times of 2000, want about 200", c, n)
		}
	}
}
