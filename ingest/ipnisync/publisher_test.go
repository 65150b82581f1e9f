package ipnisync_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/ipfs/go-cid"
)

func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return do(t, http.MethodGet, url, header...)
}

func do(t *testing.T, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestPublisherHTTP(t *testing.T) {
	pub, srv, ch, src := startPublisher(t, 2)
	base := srv.URL + ipnisync.IPNIPath

	t.Run("head", func(t *testing.T) {
		resp, body := get(t, base+"/head")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache, no-store, must-revalidate" {
			t.Errorf("Cache-Control %q", cc)
		}
		h, err := ipnisync.DecodeSignedHead(body)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Head.Equals(ch.head) || h.Topic != ipnisync.DefaultTopic {
			t.Fatalf("head %s topic %q", h.Head, h.Topic)
		}
		if err := h.Verify(pub.ID()); err != nil {
			t.Fatal(err)
		}
		// Setting the same head again keeps the same signed document.
		if err := pub.SetHead(context.Background(), ch.head); err != nil {
			t.Fatal(err)
		}
		if _, again := get(t, base+"/head"); !bytes.Equal(again, body) {
			t.Errorf("head document changed")
		}
	})

	for i, k := range []cid.Cid{ch.ads[0], ch.chunks[0], ch.chunks[1]} {
		want, _ := src.Get(context.Background(), k)
		ctype := map[int]string{0: "application/json", 1: "application/cbor", 2: "application/json"}[i]
		t.Run("block "+ctype, func(t *testing.T) {
			resp, body := get(t, base+"/"+k.String())
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
				t.Fatalf("status %d, %d bytes, want the %d stored", resp.StatusCode, len(body), len(want))
			}
			if ct := resp.Header.Get("Content-Type"); ct != ctype {
				t.Errorf("Content-Type %q, want %q", ct, ctype)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=29030400, immutable" {
				t.Errorf("Cache-Control %q", cc)
			}
			etag := resp.Header.Get("ETag")
			if etag != `"`+k.String()+`"` {
				t.Errorf("ETag %q", etag)
			}
			resp, body = get(t, base+"/"+k.String(), "If-None-Match", etag)
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("If-None-Match: status %d, %d bytes", resp.StatusCode, len(body))
			}
			// Without the protocol path, as libp2phttp and legacy clients ask.
			if resp, body = get(t, srv.URL+"/"+k.String()); resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
				t.Errorf("without the protocol path: status %d", resp.StatusCode)
			}
		})
	}

	for _, tt := range []struct {
		name, method, path string
		code               int
		says               string
	}{
		{"bad CID", http.MethodGet, "/not-a-cid", http.StatusBadRequest, `invalid CID "not-a-cid"`},
		{"unknown CID", http.MethodGet, "/bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku", http.StatusNotFound, "cid not found"},
		{"nested path", http.MethodGet, "/head/x", http.StatusNotFound, "no such resource"},
		{"protocol root", http.MethodGet, "/", http.StatusNotFound, "no such resource"},
		{"post", http.MethodPost, "/head", http.StatusMethodNotAllowed, "method POST not allowed"},
		{"put", http.MethodPut, "/" + ch.head.String(), http.StatusMethodNotAllowed, "not allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, tt.method, base+tt.path)
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.code)
			}
			if !strings.Contains(string(body), tt.says) {
				t.Errorf("body %q does not say %q", body, tt.says)
			}
			if tt.code == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", resp.Header.Get("Allow"))
			}
		})
	}

	t.Run("HEAD method", func(t *testing.T) {
		resp, body := do(t, http.MethodHead, base+"/"+ch.head.String())
		if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.ContentLength <= 0 {
			t.Fatalf("status %d, %d bytes, Content-Length %d", resp.StatusCode, len(body), resp.ContentLength)
		}
	})
}

func TestPublisherSourceError(t *testing.T) {
	key := seededKey(t, 1)
	pub, err := ipnisync.NewPublisher(key, ipnisync.BlockSourceFunc(func(context.Context, cid.Cid) ([]byte, error) {
		return nil, errors.New("disk on fire")
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := serveFunc(t, pub.ServeHTTP)
	_, k := rawBlock(1)
	resp, body := get(t, srv.URL+"/ipni/v1/ad/"+k.String())
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if strings.Contains(string(body), "fire") {
		t.Errorf("the source's error leaks to the client: %q", body)
	}
	// 204 with no head, then 200 with no topic field when the topic is empty.
	if resp, _ := get(t, srv.URL+"/ipni/v1/ad/head"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("head status %d, want 204", resp.StatusCode)
	}
	pub2, _ := ipnisync.NewPublisher(key, newMemSource(), ipnisync.WithTopic(""))
	if err := pub2.SetHead(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	srv2 := serveFunc(t, pub2.ServeHTTP)
	_, body = get(t, srv2.URL+"/ipni/v1/ad/head")
	if strings.Contains(string(body), "topic") {
		t.Errorf("head with an empty topic: %s", body)
	}
	h, err := ipnisync.DecodeSignedHead(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Verify(pub2.ID()); err != nil {
		t.Fatal(err)
	}
}

func TestPublisherGzipNegotiation(t *testing.T) {
	src := newMemSource()
	big, bigCid := rawBlock(4096)
	small, smallCid := rawBlock(100)
	src.put(bigCid, big)
	src.put(smallCid, small)
	pub, err := ipnisync.NewPublisher(seededKey(t, 1), src, ipnisync.WithGzip(true))
	if err != nil {
		t.Fatal(err)
	}
	srv := serveFunc(t, pub.ServeHTTP)
	for _, tt := range []struct {
		name, accept string
		k            cid.Cid
		gzip         bool
	}{
		{"gzip", "gzip", bigCid, true},
		{"among others", "br, gzip;q=0.5", bigCid, true},
		{"not asked", "", bigCid, false},
		{"refused", "gzip;q=0", bigCid, false},
		{"short block", "gzip", smallCid, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.accept != "" {
				hdr = []string{"Accept-Encoding", tt.accept}
			}
			resp, body := get(t, srv.URL+"/ipni/v1/ad/"+tt.k.String(), hdr...)
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tt.gzip {
				t.Fatalf("gzip %v, want %v", got, tt.gzip)
			}
			if resp.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Vary %q", resp.Header.Get("Vary"))
			}
			if tt.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			want, _ := src.Get(context.Background(), tt.k)
			if !bytes.Equal(body, want) {
				t.Fatalf("body differs from the block")
			}
		})
	}
}
