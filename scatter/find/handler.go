package find

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// Handler serves the IPNI find API over one [Backend]. See the package
// documentation for the routes and the status rules. It is safe for
// concurrent use.
//
// A lookup over a [StoreBackend] allocates nothing in the handler: the
// answer is built in a pooled buffer, and the values of its constant
// headers (Content-Type, Access-Control-Allow-Origin, Content-Length) are
// slices shared between answers. A wrapper may Set, Add or Del those
// headers, as net/http does, but must not write into their value slices.
//
// Over a StoreBackend whose store is [store.Versioned], the handler keeps
// JSON answers of single lookups ready ([WithAnswerCache]) and serves one
// again while nothing it was built from has changed (see the package
// documentation).
type Handler struct {
	b       Backend
	cfg     handlerConfig
	addrs   addrJSONCache
	answers *answers // nil: none kept
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
		answerCache:        DefaultAnswerCache,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("find: handler: %w", err)
		}
	}
	h := &Handler{b: b, cfg: cfg}
	if sb, ok := b.(*StoreBackend); ok && sb.vs != nil && sb.ttl > 0 && cfg.answerCache > 0 {
		h.answers = newAnswers(cfg.answerCache)
	}
	return h, nil
}

// Methods allowed per route, for Allow and CORS preflight answers.
const (
	findAllowGet  = "GET, HEAD, OPTIONS"
	findAllowPost = "POST, OPTIONS"
)

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr["Access-Control-Allow-Origin"] = hdrAllowAnyOrigin
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

// findKey serves GET /multihash/{key} and GET /cid/{key}.
func (h *Handler) findKey(w http.ResponseWriter, r *http.Request, key string, parse func(string) (multihash.Multihash, error), what string) {
	ndjson, ok := findNegotiate(w, r, true)
	if !ok {
		return
	}
	if h.answers != nil && !ndjson {
		if a := h.answers.get(r.URL.Path); a != nil {
			h.serveAnswer(w, r, a)
			return
		}
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
	var (
		n     int
		ferr  error
		ver   store.Version
		provs []store.Version
	)
	if sb, ok := h.b.(*StoreBackend); ok && h.answers != nil {
		buf, n, ver, provs, ferr = h.appendStoreResultsVersion(r.Context(), sb, mh, buf)
	} else if ok {
		buf, n, ferr = h.appendStoreResults(r.Context(), sb, mh, buf)
	} else {
		buf, n, ferr = h.appendResults(r.Context(), mh, buf)
	}
	buf = append(buf, mhResultSuffix+findResponseSuffix...)
	*bp = buf
	if ver != nil && ferr == nil {
		var body []byte // nil: no results
		if n > 0 {
			body = buf
		}
		h.answers.put(r.URL.Path, body, ver, provs)
	}
	if n == 0 {
		h.noResults(w, r, ferr)
		return
	}
	hdr := w.Header()
	if ferr != nil {
		h.markIncomplete(r, hdr, ferr)
	}
	hdr["Content-Type"] = hdrJSON
	hdr["Content-Length"] = contentLength(len(buf))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
}

// Header values the handler sets on every answer, shared rather than
// allocated per request. Header.Set and Add never write into a value
// slice they are given (Set replaces it, Add appends to a slice of
// capacity 1, which copies), so sharing them is safe.
var (
	hdrAllowAnyOrigin = []string{"*"}
	hdrJSON           = []string{mediaJSON + "; charset=utf-8"}
)

// contentLengths holds the Content-Length values of the answers shorter
// than len(contentLengths) bytes, made on first use.
var contentLengths [8192]atomic.Pointer[[]string]

// contentLength returns the Content-Length header value of n bytes.
func contentLength(n int) []string {
	if n >= len(contentLengths) {
		return []string{strconv.Itoa(n)}
	}
	if v := contentLengths[n].Load(); v != nil {
		return *v
	}
	v := []string{strconv.Itoa(n)}
	contentLengths[n].Store(&v)
	return v
}

// appendResults appends the results h's backend finds for mh to buf,
// comma-separated, and returns buf, how many there were and the error
// that ended them.
func (h *Handler) appendResults(ctx context.Context, mh multihash.Multihash, buf []byte) ([]byte, int, error) {
	n := 0
	for pr, err := range h.b.Find(ctx, mh) {
		if err != nil {
			return buf, n, err
		}
		buf = h.addrs.appendResultSep(buf, n > 0, &pr)
		n++
	}
	return buf, n, nil
}

// appendStoreResults is appendResults for a StoreBackend, without the
// iterator, whose closures would take buf and n to the heap: a lookup
// allocates nothing here.
func (h *Handler) appendStoreResults(ctx context.Context, sb *StoreBackend, mh multihash.Multihash, buf []byte) ([]byte, int, error) {
	n := 0
	err := sb.each(ctx, mh, func(pr ProviderResult) bool {
		buf = h.addrs.appendResultSep(buf, n > 0, &pr)
		n++
		return true
	})
	return buf, n, err
}

// appendStoreResultsVersion is appendStoreResults over a store.Versioned,
// which also returns the versions of what the results were built from.
func (h *Handler) appendStoreResultsVersion(ctx context.Context, sb *StoreBackend, mh multihash.Multihash, buf []byte) ([]byte, int, store.Version, []store.Version, error) {
	n := 0
	ver, provs, err := sb.eachVersion(ctx, mh, func(pr ProviderResult) bool {
		buf = h.addrs.appendResultSep(buf, n > 0, &pr)
		n++
		return true
	})
	return buf, n, ver, provs, err
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
