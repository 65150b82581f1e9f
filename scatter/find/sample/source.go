package sample

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/store"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// Source answers sampling requests: a store ([StoreSource]), a remote
// sampling API ([Client]), or the first of several to answer ([First]).
// A [Handler] serves any Source.
type Source interface {
	// Sample answers req, whose Beacon is set (a handler draws one for a
	// request without), with at most req.Max samples. It returns an error
	// wrapping [ErrNotFound] when the source holds no such provider and
	// context ID, and one wrapping [ErrNotSampled] when it holds the
	// context but cannot sample it.
	Sample(ctx context.Context, req Request) (Response, error)
}

// storeSource answers from a store.Sampler by the spec's algorithm.
type storeSource struct{ s store.Sampler }

// StoreSource returns the Source of an indexer: the spec's algorithm over
// s's populations ([store.Sampler]) — the context's multihashes in
// ascending byte order, indices drawn by [Pick] below their count. Every
// store that holds the same context answers the same beacon alike. If s
// does not implement store.Sampler, every answer is [ErrNotSampled].
func StoreSource(s store.Store) Source {
	sp, _ := s.(store.Sampler)
	return storeSource{sp}
}

func (src storeSource) Sample(ctx context.Context, req Request) (Response, error) {
	if src.s == nil {
		return Response{}, fmt.Errorf("%w: this indexer's store keeps no multihash populations", ErrNotSampled)
	}
	mhs, err := src.s.Sample(ctx, req.Provider, req.ContextID, func(n int) []int { return Pick(req.Beacon, n, req.Max) })
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Response{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, store.ErrNotSampled):
		return Response{}, fmt.Errorf("%w: %w", ErrNotSampled, err)
	case err != nil:
		return Response{}, err
	}
	resp := Response{Samples: make([]Link, len(mhs))}
	for i, mh := range mhs {
		resp.Samples[i] = Link{CID: cid.NewCidV1(cid.Raw, mh).String()}
	}
	return resp, nil
}

// DefaultResponseLimit is the largest answer body a [Client] reads.
const DefaultResponseLimit = 64 << 10

// maxErrorBody is how much of an error answer a Client quotes.
const maxErrorBody = 256

// Client is a [Source] that asks a remote sampling API over HTTP: an
// indexkit indexer, or any service that serves the spec's route. It is
// safe for concurrent use.
type Client struct {
	base   *url.URL
	client *http.Client
}

// NewClient returns a Client of the sampling API under baseURL (http or
// https; a path is kept as a prefix, so "http://host/x" asks
// "http://host/x/ipni/v0/sample/..."). A nil hc means
// http.DefaultClient. It fails with an error wrapping
// [ErrInvalidOption] for a bad URL.
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("sample: client: %w: %w", ErrInvalidOption, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("sample: client: %w: URL %q: scheme must be http or https", ErrInvalidOption, baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("sample: client: %w: URL %q has no host", ErrInvalidOption, baseURL)
	}
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, client: hc}, nil
}

// URL returns the base URL the Client asks.
func (c *Client) URL() string { return c.base.String() }

// Sample asks GET {base}/ipni/v0/sample/{provider}/{context}?beacon=&max=
// with the context ID in standard base64, its '/' escaped, and reads the
// spec's answer: 200 with samples as CID links ({"/":"<cid>"}, as the
// OpenAPI file has them) or as base58 multihashes (as xedni sends them),
// each returned as a CIDv1 raw link; 404 is [ErrNotFound], 501
// [ErrNotSampled], anything else a [*StatusError] quoting the body.
func (c *Client) Sample(ctx context.Context, req Request) (Response, error) {
	u := *c.base
	u.Path += Prefix + req.Provider.String() + "/" + base64.StdEncoding.EncodeToString(req.ContextID)
	u.RawPath = c.base.EscapedPath() + Prefix + req.Provider.String() + "/" + url.PathEscape(base64.StdEncoding.EncodeToString(req.ContextID))
	q := url.Values{"max": {strconv.Itoa(req.Max)}}
	if req.Beacon != nil {
		q.Set("beacon", hex.EncodeToString(req.Beacon))
	}
	u.RawQuery = q.Encode()
	target := u.Redacted()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Response{}, fmt.Errorf("sample: GET %s: %w", target, err)
	}
	hreq.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(hreq)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return Response{}, fmt.Errorf("sample: GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		se := &StatusError{Client: "sample", Method: http.MethodGet, URL: target, Code: resp.StatusCode, Body: strings.TrimSpace(string(body))}
		switch resp.StatusCode {
		case http.StatusNotFound:
			se.Err = ErrNotFound
		case http.StatusNotImplemented:
			se.Err = ErrNotSampled
		}
		return Response{}, se
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, DefaultResponseLimit+1))
	if err != nil {
		return Response{}, fmt.Errorf("sample: GET %s: read: %w", target, err)
	}
	if len(body) > DefaultResponseLimit {
		return Response{}, fmt.Errorf("sample: GET %s: answer longer than %d bytes", target, DefaultResponseLimit)
	}
	var raw struct {
		Samples []json.RawMessage `json:"samples"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Response{}, fmt.Errorf("sample: GET %s: bad answer: %w", target, err)
	}
	if len(raw.Samples) > req.Max {
		return Response{}, fmt.Errorf("sample: GET %s: %d samples, asked for at most %d", target, len(raw.Samples), req.Max)
	}
	out := Response{Samples: make([]Link, 0, len(raw.Samples))}
	for _, m := range raw.Samples {
		c, err := decodeSample(m)
		if err != nil {
			return Response{}, fmt.Errorf("sample: GET %s: bad sample %.100s: %w", target, m, err)
		}
		out.Samples = append(out.Samples, Link{CID: cid.NewCidV1(cid.Raw, c.Hash()).String()})
	}
	return out, nil
}

// decodeSample reads one sample: a link {"/":"<cid>"} or a base58
// multihash string.
func decodeSample(m json.RawMessage) (cid.Cid, error) {
	var l Link
	if err := json.Unmarshal(m, &l); err == nil && l.CID != "" {
		return cid.Decode(l.CID)
	}
	var s string
	if err := json.Unmarshal(m, &s); err != nil {
		return cid.Undef, errors.New(`neither {"/":"<cid>"} nor a base58 multihash`)
	}
	mh, err := multihash.FromB58String(s)
	if err != nil {
		return cid.Undef, err
	}
	return cid.NewCidV1(cid.Raw, mh), nil
}

// first is the Source of First.
type first struct {
	srcs    []Source
	timeout time.Duration
}

// First returns a Source that asks every one of srcs at once, each under
// its own deadline of timeout (0: only the caller's context), and answers
// with the first answer, cancelling the others: a front end over indexers
// that each hold whole contexts, any of which can answer for a context it
// holds (two indexers holding the same context give the same answer). When
// none answers it returns an error wrapping [ErrNotFound] if every source
// said so, [ErrNotSampled] if the others did (some hold the context but
// cannot sample it), and a [*FanoutError] if any failed otherwise. It
// returns only after every request it started has ended.
func First(timeout time.Duration, srcs ...Source) Source {
	return &first{srcs: srcs, timeout: timeout}
}

func (f *first) Sample(ctx context.Context, req Request) (Response, error) {
	if len(f.srcs) == 0 {
		return Response{}, fmt.Errorf("%w: no source to ask", ErrNotFound)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		resp Response
		err  error
	}
	answers := make(chan answer, len(f.srcs))
	var wg sync.WaitGroup
	for _, src := range f.srcs {
		wg.Go(func() {
			sctx, scancel := ctx, context.CancelFunc(func() {})
			if f.timeout > 0 {
				sctx, scancel = context.WithTimeout(ctx, f.timeout)
			}
			defer scancel()
			resp, err := src.Sample(sctx, req)
			if err != nil && sctx.Err() == context.DeadlineExceeded && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
			}
			answers <- answer{resp, err}
		})
	}
	defer func() {
		cancel() // the others' answers are not needed
		wg.Wait()
	}()
	var (
		notFound, notSampled, timedOut int
		errs                           []error
	)
	for range f.srcs {
		a := <-answers
		switch {
		case a.err == nil:
			return a.resp, nil
		case errors.Is(a.err, ErrNotFound):
			notFound++
		case errors.Is(a.err, ErrNotSampled):
			notSampled++
			errs = append(errs, a.err)
		default:
			if errors.Is(a.err, context.DeadlineExceeded) {
				timedOut++
			}
			errs = append(errs, a.err)
		}
	}
	failed := len(f.srcs) - notFound - notSampled
	switch {
	case failed > 0:
		return Response{}, &FanoutError{Total: len(f.srcs), Failed: failed, TimedOut: timedOut, Err: errors.Join(errs...)}
	case notSampled > 0:
		return Response{}, errors.Join(errs...)
	}
	return Response{}, fmt.Errorf("%w: none of %d sources holds it", ErrNotFound, len(f.srcs))
}

// unsampled is the Source of Unsampled.
type unsampled struct{ why string }

// unsampledError is the error of Unsampled: ErrNotSampled with its reason.
type unsampledError struct{ why string }

func (e *unsampledError) Error() string { return ErrNotSampled.Error() + ": " + e.why }
func (e *unsampledError) Unwrap() error { return ErrNotSampled }

// Unsampled returns a Source that answers every request with an error
// wrapping [ErrNotSampled] that gives why (a handler answers 501 with it):
// for a front end whose indexers hold no context whole, such as a
// keyspace-sharded query layer.
func Unsampled(why string) Source { return unsampled{why} }

func (u unsampled) Sample(context.Context, Request) (Response, error) {
	return Response{}, &unsampledError{u.why}
}
