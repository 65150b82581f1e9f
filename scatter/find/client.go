package find

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/httperr"
)

// Defaults of the HTTP backend.
const (
	// DefaultResponseLimit is the largest JSON body (a FindResponse or a
	// provider list) a [Client] reads, in bytes.
	DefaultResponseLimit = 64 << 20
	// httpMaxNDJSONLine is the longest NDJSON line a Client reads: a
	// ProviderResult with the largest context ID and metadata IPNI allows
	// and a generous address list fits many times over.
	httpMaxNDJSONLine = 1 << 20
	// httpMaxErrorBody is how much of an error answer is read to quote
	// its start in the error (httperr.Snippet).
	httpMaxErrorBody = 1024
)

// ClientOption configures a [Client] ([NewClient]). An option given an
// invalid value makes NewClient fail with an error wrapping
// [ErrInvalidOption].
type ClientOption func(*clientConfig) error

type clientConfig struct {
	client *http.Client
	limit  int64
}

// WithHTTPClient sets the client a Client sends its requests with. The
// default is [NewHTTPClient]'s.
func WithHTTPClient(c *http.Client) ClientOption {
	return func(cfg *clientConfig) error {
		if c == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrInvalidOption)
		}
		cfg.client = c
		return nil
	}
}

// WithResponseLimit sets the largest JSON answer body a Client reads, in
// bytes (default [DefaultResponseLimit]); a larger one is an error. An
// NDJSON stream may be any length, but each line is bounded. n must be at
// least 1.
func WithResponseLimit(n int64) ClientOption {
	return func(cfg *clientConfig) error {
		if n < 1 {
			return fmt.Errorf("%w: response limit %d, want at least 1", ErrInvalidOption, n)
		}
		cfg.limit = n
		return nil
	}
}

// MaxConnsPerBackend is how many connections [NewHTTPClient]'s client
// opens to one backend host at most: half the per-source connection cap of
// the listeners of indexkit's nodes (64, see examples/indexer's
// -max-conns-per-ip), which close a connection beyond it at once, leaving
// room for connections still closing and for other clients at the same
// address. A front end serving more requests at once queues them in the
// client rather than losing them.
const MaxConnsPerBackend = 32

// NewHTTPClient returns the default client of a [Client]: keep-alive,
// at most [MaxConnsPerBackend] connections per host (more requests wait
// for one), a 10 s dial timeout and no overall timeout (deadlines come
// from each call's context).
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   MaxConnsPerBackend,
		MaxConnsPerHost:       MaxConnsPerBackend,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// Client is a [Backend] that queries a remote IPNI find API over HTTP: an
// indexkit [Handler], a storetheindex indexer, or a front end such as
// indexstar. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	client *http.Client
	limit  int64
}

var _ Backend = (*Client)(nil)

// NewClient returns a Backend for the find API at baseURL (http or https;
// a path is kept as a prefix, so "https://host/indexer" queries
// "https://host/indexer/multihash/..."). It fails with an error wrapping
// [ErrInvalidOption] for a bad URL or option.
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("find: client: %w: %w", ErrInvalidOption, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("find: client: %w: URL %q: scheme must be http or https", ErrInvalidOption, baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("find: client: %w: URL %q has no host", ErrInvalidOption, baseURL)
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	cfg := clientConfig{limit: DefaultResponseLimit}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("find: client: %w", err)
		}
	}
	if cfg.client == nil {
		cfg.client = NewHTTPClient()
	}
	return &Client{base: u, client: cfg.client, limit: cfg.limit}, nil
}

// URL returns the base URL of the find API b queries.
func (b *Client) URL() string { return b.base.String() }

// get sends a GET for the path elements under the base URL.
func (b *Client) get(ctx context.Context, accept string, elem ...string) (*http.Response, string, error) {
	u := b.base.JoinPath(elem...).String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, u, err
	}
	req.Header.Set("Accept", accept)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, u, httpWithCtxErr(ctx, err)
	}
	return resp, u, nil
}

// httpWithCtxErr makes err wrap the context's error when the context ended, so
// that callers (a Gather telling timeouts from failures) see it with
// errors.Is whatever layer noticed it first.
func httpWithCtxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// httpStatusError describes an unexpected answer to a GET of u, quoting
// the start of its body.
func httpStatusError(u string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, httpMaxErrorBody))
	return &StatusError{Client: "find", Method: http.MethodGet, URL: u, Code: resp.StatusCode, Body: httperr.Snippet(body)}
}

// Find asks for NDJSON (and accepts JSON) and yields the results as they
// arrive: line by line for an NDJSON answer, all at once for a JSON one
// (only the MultihashResults for mh are used). 404 means no results; any
// other status but 200 is a [*StatusError] naming the URL and status. Errors wrap
// the context's error when the context ended.
func (b *Client) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[ProviderResult, error] {
	return func(yield func(ProviderResult, error) bool) {
		resp, u, err := b.get(ctx, mediaNDJSON+", "+mediaJSON, "multihash", mh.B58String())
		if err != nil {
			yield(ProviderResult{}, fmt.Errorf("find: find %s: %w", u, err))
			return
		}
		defer resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusNotFound:
			io.Copy(io.Discard, io.LimitReader(resp.Body, httpMaxErrorBody))
			return
		default:
			yield(ProviderResult{}, httpStatusError(u, resp))
			return
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt == mediaNDJSON {
			b.streamNDJSON(ctx, u, resp.Body, yield)
			return
		}
		data, err := httpReadLimited(resp.Body, b.limit)
		if err != nil {
			yield(ProviderResult{}, fmt.Errorf("find: find %s: %w", u, httpWithCtxErr(ctx, err)))
			return
		}
		var fr FindResponse
		if err := json.Unmarshal(data, &fr); err != nil {
			yield(ProviderResult{}, fmt.Errorf("find: find %s: decoding answer: %w", u, httperr.DecodeError(err, data)))
			return
		}
		for _, r := range fr.MultihashResults {
			if !bytes.Equal(r.Multihash, mh) {
				continue
			}
			for _, pr := range r.ProviderResults {
				if !yield(pr, nil) {
					return
				}
			}
		}
	}
}

// streamNDJSON yields one ProviderResult per line of body.
func (b *Client) streamNDJSON(ctx context.Context, u string, body io.Reader, yield func(ProviderResult, error) bool) {
	br := bufio.NewReaderSize(body, 16<<10)
	var long []byte // a line longer than the reader's buffer, so far
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > httpMaxNDJSONLine {
				yield(ProviderResult{}, fmt.Errorf("find: find %s: NDJSON line longer than %d bytes", u, httpMaxNDJSONLine))
				return
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var pr ProviderResult
			if derr := json.Unmarshal(line, &pr); derr != nil {
				yield(ProviderResult{}, fmt.Errorf("find: find %s: decoding NDJSON line: %w", u, httperr.DecodeError(derr, line)))
				return
			}
			if !yield(pr, nil) {
				return
			}
		}
		switch {
		case err == io.EOF:
			return
		case err != nil:
			yield(ProviderResult{}, fmt.Errorf("find: find %s: reading NDJSON: %w", u, httpWithCtxErr(ctx, err)))
			return
		}
	}
}

// httpReadLimited reads all of r, failing if it holds more than limit bytes.
func httpReadLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("answer larger than %d bytes", limit)
	}
	return data, nil
}

// Providers returns the remote API's provider list.
func (b *Client) Providers(ctx context.Context) ([]ProviderInfo, error) {
	var infos []ProviderInfo
	if err := b.getJSON(ctx, "providers", &infos, "providers"); err != nil {
		return nil, err
	}
	if infos == nil {
		infos = []ProviderInfo{}
	}
	return infos, nil
}

// Provider returns the remote API's record of id; a 404 is an error
// wrapping [ErrNotFound].
func (b *Client) Provider(ctx context.Context, id peer.ID) (ProviderInfo, error) {
	var info ProviderInfo
	err := b.getJSON(ctx, "provider", &info, "providers", id.String())
	return info, err
}

// getJSON GETs the path elements and decodes the JSON answer into v.
func (b *Client) getJSON(ctx context.Context, op string, v any, elem ...string) error {
	resp, u, err := b.get(ctx, mediaJSON, elem...)
	if err != nil {
		return fmt.Errorf("find: %s %s: %w", op, u, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		io.Copy(io.Discard, io.LimitReader(resp.Body, httpMaxErrorBody))
		return fmt.Errorf("find: %s %s: %w", op, u, ErrNotFound)
	default:
		return httpStatusError(u, resp)
	}
	data, err := httpReadLimited(resp.Body, b.limit)
	if err != nil {
		return fmt.Errorf("find: %s %s: %w", op, u, httpWithCtxErr(ctx, err))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("find: %s %s: decoding answer: %w", op, u, httperr.DecodeError(err, data))
	}
	return nil
}

var _ BatchFinder = (*Client)(nil)

// FindBatch looks mhs up with POST /multihash, [DefaultBatchLimit] of them
// per request, and returns one answer per multihash. A 404 is "not found"
// for every multihash of the request; any other status but 200 is a
// [*StatusError] for each. A 200 that the remote marks incomplete (a
// [HeaderBackends] value with fewer answered than asked, or Cache-Control:
// no-store, as a [Handler] marks an answer built despite a failure) gives
// every multihash of the request its results, if any, and an error: a
// multihash missing from such an answer is not known to be absent.
func (b *Client) FindBatch(ctx context.Context, mhs []multihash.Multihash) []BatchResult {
	out := make([]BatchResult, len(mhs))
	for start := 0; start < len(mhs); start += DefaultBatchLimit {
		end := min(start+DefaultBatchLimit, len(mhs))
		b.findBatch(ctx, mhs[start:end], out[start:end])
	}
	return out
}

// findBatch sends one POST /multihash for mhs and fills out, by index.
func (b *Client) findBatch(ctx context.Context, mhs []multihash.Multihash, out []BatchResult) {
	fail := func(err error) {
		for i := range out {
			out[i].Err = err
		}
	}
	u := b.base.JoinPath("multihash").String()
	body, err := json.Marshal(findBatchRequest{Multihashes: mhs})
	if err != nil {
		fail(fmt.Errorf("find: find batch %s: %w", u, err))
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		fail(fmt.Errorf("find: find batch %s: %w", u, err))
		return
	}
	req.Header.Set("Content-Type", mediaJSON)
	req.Header.Set("Accept", mediaJSON)
	resp, err := b.client.Do(req)
	if err != nil {
		fail(fmt.Errorf("find: find batch %s: %w", u, httpWithCtxErr(ctx, err)))
		return
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		io.Copy(io.Discard, io.LimitReader(resp.Body, httpMaxErrorBody))
		return
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, httpMaxErrorBody))
		fail(&StatusError{Client: "find", Method: http.MethodPost, URL: u, Code: resp.StatusCode, Body: httperr.Snippet(body)})
		return
	}
	data, err := httpReadLimited(resp.Body, b.limit)
	if err != nil {
		fail(fmt.Errorf("find: find batch %s: %w", u, httpWithCtxErr(ctx, err)))
		return
	}
	var fr FindResponse
	if err := json.Unmarshal(data, &fr); err != nil {
		fail(fmt.Errorf("find: find batch %s: decoding answer: %w", u, httperr.DecodeError(err, data)))
		return
	}
	index := make(map[string]int, len(mhs))
	for i, mh := range mhs {
		index[string(mh)] = i
	}
	for _, r := range fr.MultihashResults {
		if i, ok := index[string(r.Multihash)]; ok {
			out[i].Results = append(out[i].Results, r.ProviderResults...)
		}
	}
	if why := incompleteAnswer(resp.Header); why != "" {
		fail(fmt.Errorf("find: find batch %s: %w", u, &IncompleteError{Why: why}))
	}
}

// incompleteAnswer says why a 200 answer's headers mark it incomplete, or
// returns "".
func incompleteAnswer(h http.Header) string {
	if v := h.Get(HeaderBackends); v != "" {
		if a, t, ok := strings.Cut(v, "/"); !ok || a != t {
			return HeaderBackends + ": " + v
		}
	}
	if strings.Contains(strings.ToLower(h.Get("Cache-Control")), "no-store") {
		return "Cache-Control: no-store"
	}
	return ""
}
