package find

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Defaults of the find handler's options.
const (
	// DefaultBatchLimit is how many multihashes one POST /multihash may ask
	// for.
	DefaultBatchLimit = 1000
	// DefaultBodyLimit is the largest POST /multihash body, in bytes: room
	// for DefaultBatchLimit multihashes of 512 bytes each in base64.
	DefaultBodyLimit = 1 << 20
	// DefaultStreamWriteTimeout is how long an NDJSON answer may wait for
	// the client to take each line.
	DefaultStreamWriteTimeout = time.Minute
)

// findBatchWorkers is how many multihashes of one batch are looked up at once.
const findBatchWorkers = 8

// Media types of the find API.
const (
	mediaJSON   = "application/json"
	mediaNDJSON = "application/x-ndjson"
)

// HandlerOption configures a [Handler] ([NewHandler]). An option given an
// invalid value makes NewHandler fail with an error wrapping
// [ErrInvalidOption].
type HandlerOption func(*handlerConfig) error

type handlerConfig struct {
	log                *slog.Logger
	batchLimit         int
	bodyLimit          int64
	streamWriteTimeout time.Duration
}

// WithLogger sets the logger of backend errors the handler could not
// report to the client (errors after an NDJSON stream started, and 500s).
// The default discards.
func WithLogger(l *slog.Logger) HandlerOption {
	return func(c *handlerConfig) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

// WithBatchLimit sets how many multihashes one POST /multihash may ask for
// (default [DefaultBatchLimit]); a larger request gets 413. n must be at
// least 1.
func WithBatchLimit(n int) HandlerOption {
	return func(c *handlerConfig) error {
		if n < 1 {
			return fmt.Errorf("%w: batch limit %d, want at least 1", ErrInvalidOption, n)
		}
		c.batchLimit = n
		return nil
	}
}

// WithBodyLimit sets the largest POST /multihash body in bytes (default
// [DefaultBodyLimit]); a larger one gets 413. n must be at least 1.
func WithBodyLimit(n int64) HandlerOption {
	return func(c *handlerConfig) error {
		if n < 1 {
			return fmt.Errorf("%w: body limit %d, want at least 1", ErrInvalidOption, n)
		}
		c.bodyLimit = n
		return nil
	}
}

// WithStreamWriteTimeout sets the write deadline of an NDJSON answer
// (default [DefaultStreamWriteTimeout]), which the handler moves to d from
// now before its first line and after each line it flushes: a stream lasts
// as long as the backend yields results, whatever the server's
// WriteTimeout, and a client that stops reading for d is cut. d must be
// positive. Servers whose ResponseWriter cannot set deadlines (httptest's
// recorder) do without it.
func WithStreamWriteTimeout(d time.Duration) HandlerOption {
	return func(c *handlerConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: stream write timeout %v, want a positive duration", ErrInvalidOption, d)
		}
		c.streamWriteTimeout = d
		return nil
	}
}

// Handler serves the IPNI find API over one [Backend]. See the package
// documentation for the routes and the status rules. It is safe for
// concurrent use.
type Handler struct {
	b     Backend
	cfg   handlerConfig
	addrs addrJSONCache
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a find API handler answering from b. It serves the
// routes at the root; mount it elsewhere with [http.StripPrefix]. It fails
// with an error wrapping [ErrInvalidOption] when b is nil or an option is
// invalid.
func NewHandler(b Backend, opts ...HandlerOption) (*Handler, error) {
	if b == nil {
		return nil, fmt.Errorf("find: handler: %w: nil backend", ErrInvalidOption)
	}
	cfg := handlerConfig{
		log:                slog.New(slog.DiscardHandler),
		batchLimit:         DefaultBatchLimit,
		bodyLimit:          DefaultBodyLimit,
		streamWriteTimeout: DefaultStreamWriteTimeout,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("find: handler: %w", err)
		}
	}
	return &Handler{b: b, cfg: cfg}, nil
}

// Methods allowed per route, for Allow and CORS preflight answers.
const (
	findAllowGet  = "GET, HEAD, OPTIONS"
	findAllowPost = "POST, OPTIONS"
)

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", "*")
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/multihash/"):
		if h.method(w, r, findAllowGet) {
			h.findKey(w, r, p[len("/multihash/"):], parseMultihashKey, "multihash")
		}
	case strings.HasPrefix(p, "/cid/"):
		if h.method(w, r, findAllowGet) {
			h.findKey(w, r, p[len("/cid/"):], parseCIDKey, "CID")
		}
	case p == "/multihash":
		if h.method(w, r, findAllowPost) {
			h.findBatch(w, r)
		}
	case p == "/providers":
		if h.method(w, r, findAllowGet) {
			h.providers(w, r)
		}
	case strings.HasPrefix(p, "/providers/"):
		if h.method(w, r, findAllowGet) {
			h.provider(w, r, p[len("/providers/"):])
		}
	default:
		http.NotFound(w, r)
	}
}

// method answers OPTIONS (a CORS preflight) and methods other than those in
// allow (405), and reports whether the request is left to serve.
func (h *Handler) method(w http.ResponseWriter, r *http.Request, allow string) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if allow == findAllowGet {
			return true
		}
	case http.MethodPost:
		if allow == findAllowPost {
			return true
		}
	case http.MethodOptions:
		hdr := w.Header()
		hdr.Set("Allow", allow)
		hdr.Set("Access-Control-Allow-Methods", allow)
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			hdr.Set("Access-Control-Allow-Headers", req)
		} else {
			hdr.Set("Access-Control-Allow-Headers", "Accept, Content-Type")
		}
		hdr.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// findNegotiate picks the response format from the Accept header: NDJSON when
// ndjsonOK and the client lists it (the server prefers it, as the reference
// does), else JSON when the client accepts JSON or anything; a missing
// Accept header means JSON. It answers 406 itself and returns ok false when
// nothing acceptable is listed.
func findNegotiate(w http.ResponseWriter, r *http.Request, ndjsonOK bool) (ndjson, ok bool) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		return false, true
	}
	var jsonOK, listed bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt == "" {
				continue
			}
			listed = true
			if findAcceptQZero(params) {
				continue
			}
			switch mt {
			case mediaNDJSON:
				ndjson = ndjsonOK
			case mediaJSON, "*/*", "application/*":
				jsonOK = true
			}
		}
	}
	if ndjson {
		return true, true
	}
	if jsonOK || !listed {
		return false, true
	}
	types := mediaJSON
	if ndjsonOK {
		types = mediaJSON + ", " + mediaNDJSON
	}
	http.Error(w, "not acceptable: this resource is available as "+types, http.StatusNotAcceptable)
	return false, false
}

// findAcceptQZero reports whether the parameters of an Accept element hold q=0,
// which excludes the type.
func findAcceptQZero(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}

// findKey serves GET /multihash/{key} and GET /cid/{key}.
func (h *Handler) findKey(w http.ResponseWriter, r *http.Request, key string, parse func(string) (multihash.Multihash, error), what string) {
	ndjson, ok := findNegotiate(w, r, true)
	if !ok {
		return
	}
	mh, err := parse(key)
	if err != nil {
		http.Error(w, fmt.Sprintf("bad %s %q: %v", what, findTruncate(key, 100), err), http.StatusBadRequest)
		return
	}
	if ndjson {
		h.findNDJSON(w, r, mh)
		return
	}
	h.findJSON(w, r, mh)
}

func findTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// findJSON answers one multihash with a FindResponse.
func (h *Handler) findJSON(w http.ResponseWriter, r *http.Request, mh multihash.Multihash) {
	bp := findBufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= findMaxPooledBuf {
			findBufPool.Put(bp)
		}
	}()
	buf := append((*bp)[:0], findResponsePrefix+mhResultPrefix...)
	buf = findAppendB64(buf, mh)
	buf = append(buf, mhResultMiddle...)
	n := 0
	var ferr error
	for pr, err := range h.b.Find(r.Context(), mh) {
		if err != nil {
			ferr = err
			break
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = h.addrs.appendResult(buf, &pr)
		n++
	}
	buf = append(buf, mhResultSuffix+findResponseSuffix...)
	*bp = buf
	if n == 0 {
		h.noResults(w, r, ferr)
		return
	}
	hdr := w.Header()
	if ferr != nil {
		h.markIncomplete(r, hdr, ferr)
	}
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
}

// markIncomplete marks a 200 answer built on results that may not be all
// there is (err ended the lookup): not cacheable, and with the backends
// header when err is a *PartialError.
func (h *Handler) markIncomplete(r *http.Request, hdr http.Header, err error) {
	hdr.Set("Cache-Control", "no-store")
	if pe, ok := errors.AsType[*PartialError](err); ok {
		hdr.Set(HeaderBackends, findBackendsValue(pe))
		return
	}
	if r.Context().Err() == nil {
		h.cfg.log.Error("find: backend failed after some results", "path", r.URL.Path, "err", err)
	}
}

func findBackendsValue(pe *PartialError) string {
	return strconv.Itoa(pe.Answered) + "/" + strconv.Itoa(pe.Total)
}

// noResults answers a lookup that found nothing: 404 when the backend said
// so, 502 or 504 when backends failed, 500 for any other error.
func (h *Handler) noResults(w http.ResponseWriter, r *http.Request, err error) {
	if err == nil {
		http.Error(w, "no results for query", http.StatusNotFound)
		return
	}
	if pe, ok := errors.AsType[*PartialError](err); ok {
		failed := pe.Total - pe.Answered
		h.failedBackends(w, pe, failed > 0 && pe.TimedOut == failed)
		return
	}
	h.internalError(w, r, err)
}

// failedBackends answers "nothing found, but not every backend answered":
// 504 when every backend that did not answer ran out of time, else 502.
func (h *Handler) failedBackends(w http.ResponseWriter, pe *PartialError, timeout bool) {
	w.Header().Set(HeaderBackends, findBackendsValue(pe))
	w.Header().Set("Cache-Control", "no-store")
	status := http.StatusBadGateway
	if timeout {
		status = http.StatusGatewayTimeout
	}
	failed := pe.Total - pe.Answered
	http.Error(w, fmt.Sprintf("no results, but %d of %d backends did not answer (%d timed out)",
		failed, pe.Total, pe.TimedOut), status)
}

// internalError answers 500 for a backend error that is not a partial
// answer, and logs it unless the client went away.
func (h *Handler) internalError(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Context().Err() != nil {
		// The client went away; nobody reads this answer.
		http.Error(w, "request canceled", http.StatusServiceUnavailable)
		return
	}
	h.cfg.log.Error("find: backend failed", "path", r.URL.Path, "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}

// findNDJSON streams one ProviderResult per line, flushing each, as the
// backend yields them. The status is decided by the first thing the backend
// yields: a result starts a 200 stream; an error or the end before any
// result is answered as noResults does. An error after the stream started
// ends the stream; a *PartialError is then reported in the HeaderBackends
// trailer. The write deadline is moved forward before each line, so that
// the server's WriteTimeout bounds the wait for each line, not the stream.
func (h *Handler) findNDJSON(w http.ResponseWriter, r *http.Request, mh multihash.Multihash) {
	rc := http.NewResponseController(w)
	// The error is http.ErrNotSupported for a writer without deadlines:
	// the stream then runs as the server lets it.
	extend := func() { _ = rc.SetWriteDeadline(time.Now().Add(h.cfg.streamWriteTimeout)) }
	bp := findBufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= findMaxPooledBuf {
			findBufPool.Put(bp)
		}
	}()
	n := 0
	var ferr error
	for pr, err := range h.b.Find(r.Context(), mh) {
		if err != nil {
			ferr = err
			break
		}
		extend()
		if n == 0 {
			hdr := w.Header()
			hdr.Set("Content-Type", mediaNDJSON)
			hdr.Set("X-Content-Type-Options", "nosniff")
			hdr.Set("Trailer", HeaderBackends)
			w.WriteHeader(http.StatusOK)
		}
		n++
		line := h.addrs.appendResult((*bp)[:0], &pr)
		line = append(line, '\n')
		*bp = line
		if _, err := w.Write(line); err != nil {
			return // the client went away; the range stops the backend
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return // as for Write
		}
	}
	if n == 0 {
		h.noResults(w, r, ferr)
		return
	}
	if ferr == nil {
		return
	}
	if pe, ok := errors.AsType[*PartialError](ferr); ok {
		// Declared in the Trailer header when the stream started.
		w.Header().Set(HeaderBackends, findBackendsValue(pe))
		return
	}
	if r.Context().Err() == nil {
		h.cfg.log.Error("find: backend failed during an NDJSON stream", "path", r.URL.Path, "results", n, "err", ferr)
	}
}

// findBatchRequest is the body of POST /multihash.
type findBatchRequest struct {
	Multihashes []multihash.Multihash
}

// findBatch serves POST /multihash.
func (h *Handler) findBatch(w http.ResponseWriter, r *http.Request) {
	if _, ok := findNegotiate(w, r, false); !ok {
		return
	}
	var req findBatchRequest
	body := http.MaxBytesReader(w, r.Body, h.cfg.bodyLimit)
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("request body larger than %d bytes", h.cfg.bodyLimit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "bad request body: want {\"Multihashes\":[\"<base64>\",...]}: "+err.Error(), http.StatusBadRequest)
		return
	}
	switch n := len(req.Multihashes); {
	case n == 0:
		http.Error(w, "no multihashes in request", http.StatusBadRequest)
		return
	case n > h.cfg.batchLimit:
		http.Error(w, fmt.Sprintf("%d multihashes in request, limit %d", n, h.cfg.batchLimit), http.StatusRequestEntityTooLarge)
		return
	}
	seen := make(map[string]struct{}, len(req.Multihashes))
	mhs := req.Multihashes[:0]
	for i, mh := range req.Multihashes {
		if _, err := multihash.Decode(mh); err != nil {
			http.Error(w, fmt.Sprintf("bad multihash %d: %v", i, err), http.StatusBadRequest)
			return
		}
		if _, dup := seen[string(mh)]; dup {
			continue
		}
		seen[string(mh)] = struct{}{}
		mhs = append(mhs, mh)
	}

	results, errs := h.lookupAll(r.Context(), mhs)

	// The answer is complete only if every lookup ended without error. The
	// backends header reports the least-answered lookup; with nothing found,
	// 504 only if every failed lookup failed by timeouts alone.
	var worst *PartialError
	var other error
	allTimeouts := true
	for _, err := range errs {
		if err == nil {
			continue
		}
		pe, ok := errors.AsType[*PartialError](err)
		if !ok {
			other = err
			continue
		}
		if f := pe.Total - pe.Answered; f == 0 || pe.TimedOut != f {
			allTimeouts = false
		}
		if worst == nil || pe.Answered*worst.Total < worst.Answered*pe.Total {
			worst = pe
		}
	}
	found := 0
	for _, rs := range results {
		if len(rs) > 0 {
			found++
		}
	}
	if found == 0 {
		switch {
		case other != nil:
			h.internalError(w, r, other)
		case worst != nil:
			h.failedBackends(w, worst, allTimeouts)
		default:
			http.Error(w, "no results for query", http.StatusNotFound)
		}
		return
	}

	buf := append(make([]byte, 0, 4096), findResponsePrefix...)
	first := true
	for i, rs := range results {
		if len(rs) == 0 {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, mhResultPrefix...)
		buf = findAppendB64(buf, mhs[i])
		buf = append(buf, mhResultMiddle...)
		for j := range rs {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = h.addrs.appendResult(buf, &rs[j])
		}
		buf = append(buf, mhResultSuffix...)
	}
	buf = append(buf, findResponseSuffix...)
	hdr := w.Header()
	if worst != nil {
		h.markIncomplete(r, hdr, worst)
	} else if other != nil {
		h.markIncomplete(r, hdr, other)
	}
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
}

// lookupAll finds every multihash of mhs, findBatchWorkers at a time, and
// returns the results and the final error of each, by index. It returns
// after every lookup has ended.
func (h *Handler) lookupAll(ctx context.Context, mhs []multihash.Multihash) ([][]ProviderResult, []error) {
	results := make([][]ProviderResult, len(mhs))
	errs := make([]error, len(mhs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(findBatchWorkers, len(mhs)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(mhs) {
					return
				}
				for pr, err := range h.b.Find(ctx, mhs[i]) {
					if err != nil {
						errs[i] = err
						break
					}
					results[i] = append(results[i], pr)
				}
			}
		})
	}
	wg.Wait()
	return results, errs
}

// providers serves GET /providers. A Gather may return the records it got
// with a *PartialError: they are served, marked as incomplete.
func (h *Handler) providers(w http.ResponseWriter, r *http.Request) {
	if _, ok := findNegotiate(w, r, false); !ok {
		return
	}
	infos, err := h.b.Providers(r.Context())
	if err != nil {
		if _, ok := errors.AsType[*PartialError](err); !ok || len(infos) == 0 {
			h.noResults(w, r, err)
			return
		}
		h.markIncomplete(r, w.Header(), err)
	}
	if infos == nil {
		infos = []ProviderInfo{}
	}
	h.writeJSON(w, r, infos)
}

// provider serves GET /providers/{id}.
func (h *Handler) provider(w http.ResponseWriter, r *http.Request, key string) {
	if _, ok := findNegotiate(w, r, false); !ok {
		return
	}
	id, err := peer.Decode(key)
	if err != nil {
		http.Error(w, fmt.Sprintf("bad provider ID %q: %v", findTruncate(key, 100), err), http.StatusBadRequest)
		return
	}
	info, err := h.b.Provider(r.Context(), id)
	if err != nil {
		_, partial := errors.AsType[*PartialError](err)
		switch {
		case partial && info.AddrInfo.ID != "":
			h.markIncomplete(r, w.Header(), err)
		case partial:
			h.noResults(w, r, err)
			return
		case errors.Is(err, ErrNotFound):
			http.Error(w, "provider not found", http.StatusNotFound)
			return
		default:
			h.internalError(w, r, err)
			return
		}
	}
	h.writeJSON(w, r, &info)
}

// writeJSON answers 200 with v as JSON.
func (h *Handler) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		h.cfg.log.Error("find: cannot encode answer", "path", r.URL.Path, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}
