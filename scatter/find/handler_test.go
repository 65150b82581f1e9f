package find_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

// findFake is a Backend that answers from fixed data: per multihash (by its
// bytes) the results, then the error, if any, that ends the lookup.
type findFake struct {
	results   map[string][]find.ProviderResult
	errs      map[string]error
	providers []find.ProviderInfo
	provErr   error
}

func (f *findFake) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		for _, r := range f.results[string(mh)] {
			if !yield(r, nil) {
				return
			}
		}
		if err := f.errs[string(mh)]; err != nil {
			yield(find.ProviderResult{}, err)
		}
	}
}

func (f *findFake) Providers(ctx context.Context) ([]find.ProviderInfo, error) {
	return f.providers, f.provErr
}

func (f *findFake) Provider(ctx context.Context, id peer.ID) (find.ProviderInfo, error) {
	if f.provErr != nil {
		return find.ProviderInfo{}, f.provErr
	}
	for _, p := range f.providers {
		if p.AddrInfo.ID == id {
			return p, nil
		}
	}
	return find.ProviderInfo{}, fmt.Errorf("fake: %w", find.ErrNotFound)
}

// findRequest is one request of a handler table test.
type findRequest struct {
	method, path, body string
	header             http.Header
}

func (fr findRequest) do(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	method := fr.method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, url+fr.path, strings.NewReader(fr.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range fr.header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestHandler(t *testing.T) {
	mhA, mhB, mhC, mhD := findMH(t, 1), findMH(t, 2), findMH(t, 3), findMH(t, 4)
	p1, p2 := findAddrInfo(t, 1), findAddrInfo(t, 2)
	r1 := find.ProviderResult{ContextID: []byte("ctx-1"), Metadata: []byte{0x80, 0x12, 0}, Provider: p1}
	r2 := find.ProviderResult{ContextID: []byte("ctx-2"), Metadata: []byte{0x90, 0x12}, Provider: p2}
	partialSome := &find.PartialError{Answered: 2, Total: 3, TimedOut: 0, Err: errors.New("backend c: 500")}
	partialTimeout := &find.PartialError{Answered: 1, Total: 3, TimedOut: 2, Err: context.DeadlineExceeded}
	partialMixed := &find.PartialError{Answered: 1, Total: 3, TimedOut: 1, Err: errors.New("boom")}
	fake := &findFake{
		results: map[string][]find.ProviderResult{
			string(mhA): {r1, r2},
			string(mhB): {r1},
			string(mhC): {r2},
		},
		errs: map[string]error{
			string(mhB): partialSome,
			string(mhC): errors.New("disk on fire"),
			string(mhD): partialTimeout,
		},
		providers: []find.ProviderInfo{{AddrInfo: *p1}},
	}
	srv := httptest.NewServer(newHandler(t, fake))
	defer srv.Close()

	jsonOf := func(mh multihash.Multihash, rs ...find.ProviderResult) string {
		b, err := json.Marshal(find.FindResponse{MultihashResults: []find.MultihashResult{{Multihash: mh, ProviderResults: rs}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ndjsonOf := func(rs ...find.ProviderResult) string {
		var sb strings.Builder
		for _, r := range rs {
			b, _ := json.Marshal(r)
			sb.Write(b)
			sb.WriteByte('\n')
		}
		return sb.String()
	}
	accept := func(v ...string) http.Header { return http.Header{"Accept": v} }
	cidV1 := cid.NewCidV1(cid.Raw, mhA).String()
	cidV0 := cid.NewCidV0(mhA).String()
	b64 := base64.StdEncoding.EncodeToString
	unknownPeer := findPeer(t, 99).String()

	tests := []struct {
		name       string
		req        findRequest
		status     int
		ctype      string // prefix
		body       string // exact, unless contains is set
		contains   string
		header     map[string]string // "" means must be absent
		noSpecials bool              // no Cache-Control, no backends header
	}{
		{name: "b58 JSON", req: findRequest{path: "/multihash/" + mhA.B58String()}, status: 200,
			ctype: "application/json", body: jsonOf(mhA, r1, r2), noSpecials: true},
		{name: "hex JSON", req: findRequest{path: "/multihash/" + mhA.HexString(), header: accept("application/json")}, status: 200,
			ctype: "application/json", body: jsonOf(mhA, r1, r2)},
		{name: "cid v1", req: findRequest{path: "/cid/" + cidV1, header: accept("*/*")}, status: 200, body: jsonOf(mhA, r1, r2)},
		{name: "cid v0", req: findRequest{path: "/cid/" + cidV0}, status: 200, body: jsonOf(mhA, r1, r2)},
		{name: "NDJSON", req: findRequest{path: "/multihash/" + mhA.B58String(), header: accept("application/x-ndjson")}, status: 200,
			ctype: "application/x-ndjson", body: ndjsonOf(r1, r2), noSpecials: true},
		{name: "NDJSON preferred", req: findRequest{path: "/cid/" + cidV1, header: accept("application/json, application/x-ndjson;q=0.5")}, status: 200,
			ctype: "application/x-ndjson", body: ndjsonOf(r1, r2)},
		{name: "NDJSON q=0", req: findRequest{path: "/cid/" + cidV1, header: accept("application/x-ndjson;q=0, application/json")}, status: 200,
			ctype: "application/json", body: jsonOf(mhA, r1, r2)},
		{name: "not found", req: findRequest{path: "/multihash/" + findMH(t, 50).B58String()}, status: 404,
			ctype: "text/plain", body: "no results for query\n", noSpecials: true},
		{name: "not found NDJSON", req: findRequest{path: "/multihash/" + findMH(t, 50).B58String(), header: accept("application/x-ndjson")}, status: 404,
			body: "no results for query\n"},
		{name: "bad multihash", req: findRequest{path: "/multihash/notamultihash0OIl"}, status: 400, contains: "bad multihash"},
		{name: "empty multihash", req: findRequest{path: "/multihash/"}, status: 400, contains: "empty multihash"},
		{name: "bad CID", req: findRequest{path: "/cid/bafyfoo"}, status: 400, contains: "bad CID"},
		{name: "long key", req: findRequest{path: "/multihash/" + strings.Repeat("z", 5000)}, status: 400, contains: "longer than"},
		{name: "406", req: findRequest{path: "/multihash/" + mhA.B58String(), header: accept("text/html")}, status: 406, contains: "application/json"},
		{name: "406 providers ndjson", req: findRequest{path: "/providers", header: accept("application/x-ndjson")}, status: 406},
		{name: "partial with results", req: findRequest{path: "/multihash/" + mhB.B58String()}, status: 200, body: jsonOf(mhB, r1),
			header: map[string]string{find.HeaderBackends: "2/3", "Cache-Control": "no-store"}},
		{name: "partial with results NDJSON", req: findRequest{path: "/multihash/" + mhB.B58String(), header: accept("application/x-ndjson")}, status: 200,
			body: ndjsonOf(r1)}, // the header comes as a trailer; see TestHandlerNDJSONTrailer
		{name: "all failed timed out", req: findRequest{path: "/multihash/" + mhD.B58String()}, status: 504, contains: "2 of 3 backends did not answer",
			header: map[string]string{find.HeaderBackends: "1/3", "Cache-Control": "no-store"}},
		{name: "other error with results", req: findRequest{path: "/multihash/" + mhC.B58String()}, status: 200, body: jsonOf(mhC, r2),
			header: map[string]string{"Cache-Control": "no-store", find.HeaderBackends: ""}},
		{name: "CORS", req: findRequest{path: "/multihash/" + mhA.B58String()}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": "*"}, body: jsonOf(mhA, r1, r2)},
		{name: "preflight", req: findRequest{method: "OPTIONS", path: "/multihash/" + mhA.B58String()}, status: 204,
			header: map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS"}},
		{name: "HEAD", req: findRequest{method: "HEAD", path: "/multihash/" + mhA.B58String()}, status: 200, body: "",
			header: map[string]string{"Content-Length": fmt.Sprint(len(jsonOf(mhA, r1, r2)))}},
		{name: "HEAD not found", req: findRequest{method: "HEAD", path: "/multihash/" + findMH(t, 50).B58String()}, status: 404, body: ""},
		{name: "405", req: findRequest{method: "PUT", path: "/multihash/" + mhA.B58String()}, status: 405,
			header: map[string]string{"Allow": "GET, HEAD, OPTIONS"}},
		{name: "405 GET batch", req: findRequest{path: "/multihash"}, status: 405, header: map[string]string{"Allow": "POST, OPTIONS"}},
		{name: "unknown path", req: findRequest{path: "/nothing"}, status: 404},
		{name: "batch", req: findRequest{method: "POST", path: "/multihash",
			body: fmt.Sprintf(`{"Multihashes":[%q,%q,%q]}`, b64(mhA), b64(findMH(t, 50)), b64(mhA))}, status: 200,
			body: jsonOf(mhA, r1, r2), noSpecials: true},
		{name: "batch two found, one partial", req: findRequest{method: "POST", path: "/multihash",
			body: fmt.Sprintf(`{"Multihashes":[%q,%q]}`, b64(mhA), b64(mhB))}, status: 200,
			body: `{"MultihashResults":[` + strings.TrimSuffix(strings.TrimPrefix(jsonOf(mhA, r1, r2), `{"MultihashResults":[`), "]}") + "," +
				strings.TrimSuffix(strings.TrimPrefix(jsonOf(mhB, r1), `{"MultihashResults":[`), "]}") + "]}",
			header: map[string]string{find.HeaderBackends: "2/3", "Cache-Control": "no-store"}},
		{name: "batch none found", req: findRequest{method: "POST", path: "/multihash",
			body: fmt.Sprintf(`{"Multihashes":[%q]}`, b64(findMH(t, 50)))}, status: 404, body: "no results for query\n"},
		{name: "batch none found, timeouts", req: findRequest{method: "POST", path: "/multihash",
			body: fmt.Sprintf(`{"Multihashes":[%q,%q]}`, b64(findMH(t, 50)), b64(mhD))}, status: 504,
			header: map[string]string{find.HeaderBackends: "1/3"}},
		{name: "batch empty", req: findRequest{method: "POST", path: "/multihash", body: `{"Multihashes":[]}`}, status: 400},
		{name: "batch bad json", req: findRequest{method: "POST", path: "/multihash", body: `{"Multihashes":`}, status: 400},
		{name: "batch bad mh", req: findRequest{method: "POST", path: "/multihash", body: `{"Multihashes":["AAAA"]}`}, status: 400, contains: "bad multihash 0"},
		{name: "providers", req: findRequest{path: "/providers"}, status: 200, ctype: "application/json",
			body: func() string { b, _ := json.Marshal(fake.providers); return string(b) }()},
		{name: "provider", req: findRequest{path: "/providers/" + p1.ID.String()}, status: 200,
			body: func() string { b, _ := json.Marshal(fake.providers[0]); return string(b) }()},
		{name: "provider not found", req: findRequest{path: "/providers/" + unknownPeer}, status: 404, body: "provider not found\n"},
		{name: "provider bad ID", req: findRequest{path: "/providers/xyz"}, status: 400, contains: "bad provider ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := tt.req.do(t, srv.URL)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); tt.ctype != "" && !strings.HasPrefix(ct, tt.ctype) {
				t.Errorf("Content-Type %q, want %q...", ct, tt.ctype)
			}
			switch {
			case tt.contains != "":
				if !strings.Contains(body, tt.contains) {
					t.Errorf("body %q does not contain %q", body, tt.contains)
				}
			case tt.body != "" || tt.req.method == "HEAD":
				if body != tt.body {
					t.Errorf("body\n%s\nwant\n%s", body, tt.body)
				}
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Errorf("Access-Control-Allow-Origin %q, want *", got)
			}
			for k, want := range tt.header {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if tt.noSpecials {
				for _, k := range []string{"Cache-Control", find.HeaderBackends} {
					if v := resp.Header.Get(k); v != "" {
						t.Errorf("complete answer has %s: %q", k, v)
					}
				}
			}
		})
	}

	t.Run("502 mixed failures", func(t *testing.T) {
		f := &findFake{errs: map[string]error{string(mhA): partialMixed}}
		s := httptest.NewServer(newHandler(t, f))
		defer s.Close()
		for _, h := range []http.Header{nil, accept("application/x-ndjson")} {
			resp, body := findRequest{path: "/multihash/" + mhA.B58String(), header: h}.do(t, s.URL)
			if resp.StatusCode != 502 || resp.Header.Get(find.HeaderBackends) != "1/3" || !strings.Contains(body, "2 of 3 backends") {
				t.Errorf("status %d, backends %q, body %q; want 502, 1/3", resp.StatusCode, resp.Header.Get(find.HeaderBackends), body)
			}
		}
	})
	t.Run("500 backend error", func(t *testing.T) {
		f := &findFake{errs: map[string]error{string(mhA): errors.New("disk on fire")}, provErr: errors.New("disk on fire")}
		s := httptest.NewServer(newHandler(t, f))
		defer s.Close()
		for _, p := range []string{"/multihash/" + mhA.B58String(), "/providers", "/providers/" + p1.ID.String()} {
			resp, body := findRequest{path: p}.do(t, s.URL)
			if resp.StatusCode != 500 || strings.Contains(body, "fire") {
				t.Errorf("%s: status %d body %q; want 500 without the internal error", p, resp.StatusCode, body)
			}
		}
	})
	t.Run("empty providers", func(t *testing.T) {
		s := httptest.NewServer(newHandler(t, &findFake{}))
		defer s.Close()
		resp, body := findRequest{path: "/providers"}.do(t, s.URL)
		if resp.StatusCode != 200 || body != "[]" {
			t.Errorf("status %d body %q, want 200 []", resp.StatusCode, body)
		}
	})
	t.Run("batch limits", func(t *testing.T) {
		s := httptest.NewServer(newHandler(t, fake, find.WithBatchLimit(2), find.WithBodyLimit(200)))
		defer s.Close()
		three := fmt.Sprintf(`{"Multihashes":[%q,%q,%q]}`, b64(mhA), b64(mhB), b64(mhC))
		resp, body := findRequest{method: "POST", path: "/multihash", body: three}.do(t, s.URL)
		if resp.StatusCode != 413 || !strings.Contains(body, "limit 2") {
			t.Errorf("3 of 2: status %d body %q, want 413", resp.StatusCode, body)
		}
		big := `{"Multihashes":["` + strings.Repeat("A", 300) + `"]}`
		resp, body = findRequest{method: "POST", path: "/multihash", body: big}.do(t, s.URL)
		if resp.StatusCode != 413 || !strings.Contains(body, "200 bytes") {
			t.Errorf("300-byte body: status %d body %q, want 413", resp.StatusCode, body)
		}
	})
}

// TestHandlerNDJSONTrailer checks that a stream ending in a *PartialError
// reports the backends in a trailer (the status was sent with the first
// line).
func TestHandlerNDJSONTrailer(t *testing.T) {
	mh := findMH(t, 1)
	r1 := find.ProviderResult{ContextID: []byte("c"), Provider: findAddrInfo(t, 1)}
	f := &findFake{
		results: map[string][]find.ProviderResult{string(mh): {r1}},
		errs:    map[string]error{string(mh): &find.PartialError{Answered: 3, Total: 4, TimedOut: 1, Err: context.DeadlineExceeded}},
	}
	srv := httptest.NewServer(newHandler(t, f))
	defer srv.Close()
	resp, _ := findRequest{path: "/multihash/" + mh.B58String(), header: http.Header{"Accept": {"application/x-ndjson"}}}.do(t, srv.URL)
	if resp.StatusCode != 200 || resp.Trailer.Get(find.HeaderBackends) != "3/4" {
		t.Errorf("status %d, trailer %v; want 200 and %s: 3/4", resp.StatusCode, resp.Trailer, find.HeaderBackends)
	}
}

// findSlow yields one result, then waits for release before the next.
type findSlow struct {
	findFake
	r       find.ProviderResult
	release chan struct{}
}

func (f *findSlow) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		if !yield(f.r, nil) {
			return
		}
		select {
		case <-f.release:
		case <-ctx.Done():
			yield(find.ProviderResult{}, ctx.Err())
			return
		}
		yield(f.r, nil)
	}
}

// TestHandlerNDJSONStreams checks that the first line reaches the client
// while the backend is still working.
func TestHandlerNDJSONStreams(t *testing.T) {
	f := &findSlow{r: find.ProviderResult{ContextID: []byte("c"), Provider: findAddrInfo(t, 1)}, release: make(chan struct{})}
	srv := httptest.NewServer(newHandler(t, f))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/multihash/"+findMH(t, 1).B58String(), nil)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(resp.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	select {
	case <-lines:
	case <-time.After(10 * time.Second):
		t.Fatal("first NDJSON line not flushed while the backend was busy")
	}
	close(f.release)
	n := 1
	for range lines {
		n++
	}
	if n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
}

// TestHandlerJSONIdentical checks that the handler's hand-written JSON is
// byte for byte what encoding/json writes for the model, on random results.
func TestHandlerJSONIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	addrPool := []string{"/ip4/1.2.3.4/tcp/80/http", "/ip6/::1/udp/4001/quic-v1", "/dns4/example.com/tcp/443/tls/http",
		"/dns/a.b/tcp/1/http-path/x%2Fy%3Cz%3E", "/ip4/127.0.0.1/tcp/3000/p2p/" + findPeer(t, 7).String()}
	randBytes := func(n int) []byte {
		if n < 0 {
			return nil
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	for iter := range 200 {
		mh := findMH(t, iter)
		var rs []find.ProviderResult
		for range 1 + rng.IntN(5) {
			r := find.ProviderResult{ContextID: randBytes(rng.IntN(70) - 5), Metadata: randBytes(rng.IntN(100) - 5)}
			if rng.IntN(10) > 0 {
				ai := &peer.AddrInfo{ID: findPeer(t, rng.IntN(4))}
				for range rng.IntN(4) {
					ai.Addrs = append(ai.Addrs, multiaddr.StringCast(addrPool[rng.IntN(len(addrPool))]))
				}
				r.Provider = ai
			}
			rs = append(rs, r)
		}
		f := &findFake{results: map[string][]find.ProviderResult{string(mh): rs}}
		h := newHandler(t, f)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/multihash/"+mh.B58String(), nil))
		want, _ := json.Marshal(find.FindResponse{MultihashResults: []find.MultihashResult{{Multihash: mh, ProviderResults: rs}}})
		if rec.Body.String() != string(want) {
			t.Fatalf("JSON differs from encoding/json:\n got %s\nwant %s", rec.Body, want)
		}
		rec = httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/multihash/"+mh.B58String(), nil)
		req.Header.Set("Accept", "application/x-ndjson")
		h.ServeHTTP(rec, req)
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		for _, r := range rs {
			enc.Encode(r)
		}
		if rec.Body.String() != sb.String() {
			t.Fatalf("NDJSON differs from encoding/json:\n got %s\nwant %s", rec.Body, sb.String())
		}
	}
}

// findPaced yields n results, pause apart.
type findPaced struct {
	findFake
	r     find.ProviderResult
	n     int
	pause time.Duration
}

func (f *findPaced) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		for i := range f.n {
			if i > 0 {
				time.Sleep(f.pause)
			}
			if !yield(f.r, nil) {
				return
			}
		}
	}
}

// TestHandlerNDJSONOutlivesWriteTimeout checks that a stream longer than
// the server's WriteTimeout is not cut: the handler moves the deadline at
// each line.
func TestHandlerNDJSONOutlivesWriteTimeout(t *testing.T) {
	const writeTimeout, lines = 200 * time.Millisecond, 5
	f := &findPaced{r: find.ProviderResult{ContextID: []byte("c"), Provider: findAddrInfo(t, 1)}, n: lines, pause: writeTimeout / 2}
	srv := httptest.NewUnstartedServer(newHandler(t, f, find.WithStreamWriteTimeout(writeTimeout)))
	srv.Config.WriteTimeout = writeTimeout
	srv.Start()
	defer srv.Close()
	for _, ndjson := range []bool{true, false} {
		req, _ := http.NewRequest("GET", srv.URL+"/multihash/"+findMH(t, 1).B58String(), nil)
		if ndjson {
			req.Header.Set("Accept", "application/x-ndjson")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if !ndjson {
				continue // the JSON answer, written after 400ms, is cut: as it should
			}
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case ndjson && (err != nil || strings.Count(string(body), "\n") != lines):
			t.Errorf("NDJSON stream of %v over a %v WriteTimeout: %d lines, %v; want %d lines", (lines-1)*f.pause, writeTimeout,
				strings.Count(string(body), "\n"), err, lines)
		case !ndjson && err == nil && resp.StatusCode == http.StatusOK:
			t.Errorf("JSON answer written after the WriteTimeout arrived whole: the test does not see the deadline")
		}
	}
}
