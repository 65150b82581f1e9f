package indexernode_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/mr-tron/base58"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/scatter/find/sample"
)

// A running indexer that ingested a generated publisher answers the
// sampling API with multihashes that the publisher's ground truth puts in
// that context, the same ones for the same beacon and others for another
// beacon, 404 for an unknown context, 400 for bad input; /health and
// /stats answer on the find port; every route of the find listener
// answers CORS preflights.
func TestFindListener(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pub, addr := servePublisher(t, publishernode.Spec{Seed: 16, Ads: 6, Entries: 150, ChunkSize: 40, RemoveEvery: 4})
	urls, stop := startIndexer(ctx, t, t.TempDir(), func(c *indexernode.Config) { c.IndexSampling = true })
	defer stop()
	s, err := announce.NewHTTPSender([]string{urls.ingest}, pub.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
		t.Fatal(err)
	}
	waitTruth(ctx, t, urls.find, pub)

	// The oracle: the publisher's ground truth, context by context.
	truth := pub.Truth(true)
	byCtx := map[string][][]byte{}
	for _, e := range truth.Entries {
		mh, err := base58.Decode(e.Multihash)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range e.Values {
			if v.ProviderID == truth.Publisher {
				byCtx[string(v.ContextID)] = append(byCtx[string(v.ContextID)], mh)
			}
		}
	}
	if len(byCtx) < 2 {
		t.Fatalf("the publisher's truth has %d contexts; the test wants several", len(byCtx))
	}
	const b1, b2 = "3439d92d58e47d342131d446a3abe264396dd264717897af30525c98408c834f", "00ff"
	base := urls.find + sample.Prefix + truth.Publisher + "/"
	for ctxID, mhs := range byCtx {
		path := url.PathEscape(base64.StdEncoding.EncodeToString([]byte(ctxID)))
		first := sampleGet(ctx, t, base+path+"?max=10&beacon="+b1)
		if len(first) != min(10, len(mhs)) {
			t.Fatalf("context %x of %d multihashes: %d samples, want %d", ctxID, len(mhs), len(first), min(10, len(mhs)))
		}
		for _, mh := range first {
			if !slices.ContainsFunc(mhs, func(x []byte) bool { return bytes.Equal(x, mh) }) {
				t.Fatalf("context %x: sample %x is not among the multihashes the publisher advertised in it", ctxID, mh)
			}
		}
		if again := sampleGet(ctx, t, base+path+"?max=10&beacon="+b1); !slices.EqualFunc(first, again, bytes.Equal) {
			t.Fatalf("context %x: the same beacon gave another sample", ctxID)
		}
		if len(mhs) >= 20 {
			if other := sampleGet(ctx, t, base+path+"?max=10&beacon="+b2); slices.EqualFunc(first, other, bytes.Equal) {
				t.Fatalf("context %x of %d multihashes: another beacon gave the same sample", ctxID, len(mhs))
			}
		}
	}
	if code, _ := plainGet(ctx, t, base+"bm90LWEtY29udGV4dA"); code != http.StatusNotFound {
		t.Fatalf("an unknown context: %d, want 404", code)
	}
	for path, want := range map[string]string{
		sample.Prefix + "12D3Koo/AAAA":                                    "bad provider ID",
		sample.Prefix + truth.Publisher + "/A!A":                          "bad context ID",
		sample.Prefix + truth.Publisher + "/AAAA?beacon=zz":               "bad beacon",
		sample.Prefix + truth.Publisher + "/AAAA?max=11":                  "bad max",
		sample.Prefix + truth.Publisher + "/" + strings.Repeat("A", 1100): "limit 1024",
	} {
		if code, body := plainGet(ctx, t, urls.find+path); code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%.80s: %d %q, want 400 naming %q", path, code, body, want)
		}
	}

	var h health.Health
	jsonGet(ctx, t, urls.find+"/health", &h)
	if h.Status != "ok" || h.State != health.Active || h.ID == "" {
		t.Fatalf("/health on the find port: %+v", h)
	}
	var st health.Stats
	jsonGet(ctx, t, urls.find+"/stats", &st)
	// The count is exact on Pebble: the multihashes of the truth, each
	// once (the estimate beside it is Pebble's and may differ).
	live := 0
	for _, e := range truth.Entries {
		if len(e.Values) > 0 {
			live++
		}
	}
	if st.Providers != 1 || st.EntriesEstimate <= 0 || !st.EntriesExact || st.EntriesCount != int64(live) {
		t.Fatalf("/stats of a Pebble indexer with one provider: %+v, want an exact count of %d", st, live)
	}
	if code, _ := plainGet(ctx, t, urls.ingest+"/health"); code != http.StatusOK {
		t.Fatalf("/health on the ingest port: %d", code)
	}

	for _, path := range []string{"/health", "/stats", sample.Prefix + truth.Publisher + "/AAAA",
		"/multihash/" + truth.Entries[0].Multihash, "/cid/" + cid.NewCidV1(cid.Raw, mustB58(t, truth.Entries[0].Multihash)).String(),
		"/providers", "/providers/" + truth.Publisher, "/multihash",
		"/routing/v1/providers/" + cid.NewCidV1(cid.Raw, mustB58(t, truth.Entries[0].Multihash)).String(), "/routing/v1/peers/" + truth.Publisher} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodOptions, urls.find+path, nil)
		req.Header.Set("Origin", "https://example.org")
		req.Header.Set("Access-Control-Request-Method", "GET")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		method := "GET"
		if path == "/multihash" {
			method = "POST" // the batch lookup
		}
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), method) {
			t.Errorf("OPTIONS %s: %d %v, want 204 with CORS headers allowing %s", path, resp.StatusCode, resp.Header, method)
		}
	}
}

func mustB58(t *testing.T, s string) []byte {
	b, err := base58.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func plainGet(ctx context.Context, t *testing.T, u string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" && !strings.Contains(u, "/health") {
		t.Errorf("GET %.80s: no Access-Control-Allow-Origin", u)
	}
	return resp.StatusCode, string(body)
}

func jsonGet(ctx context.Context, t *testing.T, u string, v any) {
	t.Helper()
	code, body := plainGet(ctx, t, u)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %q", u, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %q: %v", u, body, err)
	}
}

// sampleGet returns the multihashes of a 200 sampling answer.
func sampleGet(ctx context.Context, t *testing.T, u string) [][]byte {
	t.Helper()
	var r sample.Response
	jsonGet(ctx, t, u, &r)
	var out [][]byte
	for _, l := range r.Samples {
		c, err := cid.Decode(l.CID)
		if err != nil {
			t.Fatalf("sample %q: %v", l.CID, err)
		}
		out = append(out, c.Hash())
	}
	return out
}

// Without -sampling a pebble index keeps no populations: the sampling API
// answers 501, naming the flag, never a sample drawn from part of a
// context.
func TestSamplingOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pub, addr := servePublisher(t, publishernode.Spec{Seed: 17, Ads: 2, Entries: 20, ChunkSize: 10})
	urls, stop := startIndexer(ctx, t, t.TempDir())
	defer stop()
	s, err := announce.NewHTTPSender([]string{urls.ingest}, pub.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
		t.Fatal(err)
	}
	waitTruth(ctx, t, urls.find, pub)
	truth := pub.Truth(true)
	for _, e := range truth.Entries {
		for _, v := range e.Values {
			path := urls.find + sample.Prefix + truth.Publisher + "/" + url.PathEscape(base64.StdEncoding.EncodeToString(v.ContextID)) + "?max=3&beacon=00ff"
			code, body := plainGet(ctx, t, path)
			if code != http.StatusNotImplemented || !strings.Contains(body, `"error"`) {
				t.Fatalf("sampling a context without -sampling: %d %q, want 501 with a JSON error", code, body)
			}
			return
		}
	}
	t.Fatal("the publisher's truth has no values")
}
