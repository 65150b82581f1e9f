package routing

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/accept"
	"github.com/indexkit/indexkit/scatter/find"
)

// Prefix is the path under which a [Handler] serves: mount it with
// mux.Handle(routing.Prefix, h).
const Prefix = "/routing/v1/"

// Media types of the API.
const (
	mediaJSON   = accept.JSON
	mediaNDJSON = accept.NDJSON
)

// Shared header values, set without Header.Set's allocation; their
// length equals their capacity, so that an Add copies them.
var (
	hdrAnyOrigin  = []string{"*"}
	hdrVaryAccept = []string{"Accept"}
	hdrJSON       = []string{mediaJSON}
)

// cacheNoStore marks an answer that may not be all there is.
const cacheNoStore = "no-store"

// Handler serves Delegated Routing V1 over one [find.Backend]. See the
// package documentation for the routes, the status rules and the
// Cache-Control values. It is safe for concurrent use.
type Handler struct {
	b                   find.Backend
	cfg                 config
	ccFound, ccNotFound string
	meta                metaCache
	peers               peerCache
}

var _ http.Handler = (*Handler)(nil)

// New returns a handler answering from b: a store backend on an indexer,
// a scatter Gather on a front end, or any other find.Backend. It fails
// with an error wrapping [ErrInvalidOption] when b is nil or an option is
// invalid.
func New(b find.Backend, opts ...Option) (*Handler, error) {
	if b == nil {
		return nil, fmt.Errorf("routing: %w: nil backend", ErrInvalidOption)
	}
	cfg := config{
		log:                slog.New(slog.DiscardHandler),
		maxAge:             DefaultMaxAge,
		notFound:           DefaultNotFoundMaxAge,
		jsonLimit:          DefaultJSONLimit,
		streamWriteTimeout: DefaultStreamWriteTimeout,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("routing: %w", err)
		}
	}
	return &Handler{b: b, cfg: cfg, ccFound: cacheControl(cfg.maxAge), ccNotFound: cacheControl(cfg.notFound)}, nil
}

// cacheControl is the Cache-Control of a complete answer cached for d.
func cacheControl(d time.Duration) string {
	s := int(d / time.Second)
	if s == 0 {
		return "no-cache"
	}
	return "public, max-age=" + strconv.Itoa(s) + ", stale-while-revalidate=60, stale-if-error=120"
}

const (
	allowGet  = "GET, HEAD, OPTIONS"
	allowNone = "OPTIONS"
)

// ServeHTTP serves the routes of the package documentation.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()["Access-Control-Allow-Origin"] = hdrAnyOrigin
	p, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if len(p) > MaxPathLen {
		msg := fmt.Sprintf("path longer than %d bytes after %s", MaxPathLen, Prefix)
		if strings.HasPrefix(p, "providers/") || strings.HasPrefix(p, "peers/") {
			unprocessable(w, msg) // a CID or peer ID too long to be one
		} else {
			badRequest(w, msg)
		}
		return
	}
	switch {
	case strings.HasPrefix(p, "providers/"):
		if h.method(w, r, allowGet) {
			h.findProviders(w, r, p[len("providers/"):])
		}
	case strings.HasPrefix(p, "peers/"):
		if h.method(w, r, allowGet) {
			h.findPeers(w, r, p[len("peers/"):])
		}
	case p == "providers", p == "peers", strings.HasPrefix(p, "ipns/"), strings.HasPrefix(p, "dht/"):
		if h.method(w, r, allowNone) {
			notImplemented(w)
		}
	default:
		badRequest(w, fmt.Sprintf("unknown path %q: this server answers %sproviders/{cid} and %speers/{peer-id}", truncate(p, 100), Prefix, Prefix))
	}
}

// badRequest answers a path the API does not have: 400, as the spec's
// Error Codes say for an unknown path.
func badRequest(w http.ResponseWriter, msg string) {
	http.Error(w, msg, http.StatusBadRequest)
}

// unprocessable answers a lookup whose CID, peer ID or query does not
// conform to the spec's schema: 422, as the spec's status codes for
// /providers and /peers say, with msg (naming the problem) as a text/plain
// body. Helia's client turns 422 into its InvalidRequestError, boxo's
// into an HTTPError that quotes the body; both read any other 4xx as a
// bad response.
func unprocessable(w http.ResponseWriter, msg string) {
	http.Error(w, msg, http.StatusUnprocessableEntity)
}

// setLastModified sets Last-Modified to now: the time of the resolution,
// which the spec asks of every /providers and /peers answer so that
// caches can revalidate with If-Modified-Since. The value is formatted
// once a second and shared (its length equals its capacity, so an Add
// copies it).
func setLastModified(hdr http.Header) {
	now := time.Now()
	if s := lastModified.Load(); s != nil && s.sec == now.Unix() {
		hdr["Last-Modified"] = s.v
		return
	}
	s := &stamp{sec: now.Unix(), v: []string{now.UTC().Format(http.TimeFormat)}}
	lastModified.Store(s)
	hdr["Last-Modified"] = s.v
}

// stamp is a Last-Modified value and the Unix second it names.
type stamp struct {
	sec int64
	v   []string
}

var lastModified atomic.Pointer[stamp]

func notImplemented(w http.ResponseWriter) {
	http.Error(w, "not implemented: this server answers GET "+Prefix+"providers/{cid} and GET "+Prefix+"peers/{peer-id}; announce content to the indexer's ingest API", http.StatusNotImplemented)
}

// method answers OPTIONS (a CORS preflight, 204) and the methods not in
// allow (501, as the spec says for a method it does not support), and
// reports whether the request is left to serve.
func (h *Handler) method(w http.ResponseWriter, r *http.Request, allow string) bool {
	hdr := w.Header()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if allow == allowGet {
			return true
		}
	case http.MethodOptions:
		hdr.Set("Allow", allow)
		hdr.Set("Access-Control-Allow-Methods", allow)
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			hdr.Set("Access-Control-Allow-Headers", req)
		} else {
			hdr.Set("Access-Control-Allow-Headers", "Accept")
		}
		hdr.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	hdr.Set("Allow", allow)
	notImplemented(w)
	return false
}

// request parses what every lookup shares: the filters and the format.
// It answers 422 or 406 itself and returns ok false.
func request(w http.ResponseWriter, r *http.Request) (f filters, ndjson, ok bool) {
	f, err := parseFilters(r.URL.RawQuery)
	if err != nil {
		unprocessable(w, err.Error())
		return f, false, false
	}
	ndjson, ok = accept.Negotiate(w, r, true)
	return f, ndjson, ok
}

// findProviders serves GET /routing/v1/providers/{cid}, with one Find.
func (h *Handler) findProviders(w http.ResponseWriter, r *http.Request, key string) {
	mh, err := parseCID(key)
	if err != nil {
		unprocessable(w, fmt.Sprintf("bad CID %q: %v", truncate(key, 100), err))
		return
	}
	f, ndjson, ok := request(w, r)
	if !ok {
		return
	}
	s := recSetPool.Get().(*recSet)
	defer func() { s.reset(); recSetPool.Put(s) }()
	if ndjson {
		h.streamProviders(w, r, mh, &f, s)
		return
	}
	var ferr error
	for pr, err := range h.b.Find(r.Context(), mh) {
		if err != nil {
			ferr = err
			break
		}
		if pr.Provider == nil || pr.Provider.ID == "" {
			continue
		}
		s.add(&pr, h)
	}
	buf := append(s.buf[:0], `{"Providers":[`...)
	n := 0
	for i := range s.recs {
		if n == h.cfg.jsonLimit {
			break
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		var kept bool
		if buf, kept = appendRec(buf, &s.recs[i], &f); kept {
			n++
		} else if n > 0 {
			buf = buf[:len(buf)-1]
		}
	}
	buf = append(buf, "]}"...)
	s.buf = buf
	h.answer(w, r, buf, n, ferr)
}

// answer writes a JSON answer of n records (body), whose lookup ended
// with err: cacheable for the found or the not-found time when err is
// nil, no-store otherwise, and 502, 504 or 500 instead when err leaves
// nothing to answer.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, body []byte, n int, err error) {
	if n == 0 && err != nil {
		h.failed(w, r, err)
		return
	}
	hdr := w.Header()
	switch {
	case err != nil:
		h.incomplete(r, hdr, err)
	case n > 0:
		hdr["Cache-Control"] = []string{h.ccFound}
	default:
		hdr["Cache-Control"] = []string{h.ccNotFound}
	}
	hdr["Vary"] = hdrVaryAccept
	hdr["Content-Type"] = hdrJSON
	setLastModified(hdr)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// streamProviders writes one peer record a line as the backend yields
// results. A provider seen again is written again only when the union of
// its addresses and protocols grew, and then in full.
func (h *Handler) streamProviders(w http.ResponseWriter, r *http.Request, mh multihash.Multihash, f *filters, s *recSet) {
	rc := http.NewResponseController(w)
	n := 0
	var ferr error
	for pr, err := range h.b.Find(r.Context(), mh) {
		if err != nil {
			ferr = err
			break
		}
		if pr.Provider == nil || pr.Provider.ID == "" {
			continue
		}
		i, changed := s.add(&pr, h)
		if !changed {
			continue
		}
		rec := &s.recs[i]
		line, kept := appendRec(s.buf[:0], rec, f)
		if !kept {
			continue
		}
		line = append(line, '\n')
		s.buf = line
		if string(rec.last) == string(line) {
			continue // a change the filters hid
		}
		rec.last = append(rec.last[:0], line...)
		// The error is http.ErrNotSupported for a writer without
		// deadlines: the stream then runs as the server lets it.
		_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.streamWriteTimeout))
		if n == 0 {
			hdr := w.Header()
			hdr.Set("Content-Type", mediaNDJSON)
			hdr.Set("X-Content-Type-Options", "nosniff")
			hdr.Set("Vary", "Accept")
			// The header leaves before the lookup ends: nothing says yet
			// that the answer is complete.
			hdr.Set("Cache-Control", cacheNoStore)
			hdr.Set("Trailer", find.HeaderBackends)
			setLastModified(hdr)
			w.WriteHeader(http.StatusOK)
		}
		n++
		if _, err := w.Write(line); err != nil {
			return // the client went away; the range stops the backend
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
	}
	if n == 0 {
		h.emptyStream(w, r, ferr)
		return
	}
	if ferr == nil {
		return
	}
	if pe, ok := errors.AsType[*find.PartialError](ferr); ok {
		w.Header().Set(find.HeaderBackends, backendsValue(pe)) // the trailer
		return
	}
	if r.Context().Err() == nil {
		h.cfg.log.Error("routing: backend failed during an NDJSON stream", "path", r.URL.Path, "lines", n, "err", ferr)
	}
}

// emptyStream answers a stream that found nothing to send: an empty 200
// with the not-found Cache-Control when the lookup was complete.
func (h *Handler) emptyStream(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		h.failed(w, r, err)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", mediaNDJSON)
	hdr.Set("Vary", "Accept")
	hdr.Set("Cache-Control", h.ccNotFound)
	setLastModified(hdr)
	hdr.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// findPeers serves GET /routing/v1/peers/{peer-id} from the backend's
// provider record, with one Provider call.
func (h *Handler) findPeers(w http.ResponseWriter, r *http.Request, key string) {
	id, err := parsePeer(key)
	if err != nil {
		unprocessable(w, fmt.Sprintf("bad peer ID %q: %v", truncate(key, 100), err))
		return
	}
	f, ndjson, ok := request(w, r)
	if !ok {
		return
	}
	info, err := h.b.Provider(r.Context(), id)
	if err != nil {
		_, partial := errors.AsType[*find.PartialError](err)
		switch {
		case partial && info.AddrInfo.ID != "":
			// Served, marked incomplete by answer.
		case errors.Is(err, find.ErrNotFound) && !partial:
			err, info.AddrInfo.ID = nil, ""
		default:
			h.failed(w, r, err)
			return
		}
	}
	var line []byte
	n := 0
	if info.AddrInfo.ID != "" {
		rec := peerRec{id: info.AddrInfo.ID, pj: h.peers.get(&info.AddrInfo)}
		rec.addrs = rec.pj.addrs
		if line, ok = appendRec(nil, &rec, &f); ok {
			n = 1
		}
	}
	if ndjson {
		hdr := w.Header()
		if n == 0 {
			h.emptyStream(w, r, err)
			return
		}
		switch {
		case err != nil:
			h.incomplete(r, hdr, err)
		default:
			hdr.Set("Cache-Control", h.ccFound)
		}
		hdr.Set("Content-Type", mediaNDJSON)
		hdr.Set("Vary", "Accept")
		setLastModified(hdr)
		line = append(line, '\n')
		hdr.Set("Content-Length", strconv.Itoa(len(line)))
		w.WriteHeader(http.StatusOK)
		w.Write(line)
		return
	}
	body := append(append([]byte(`{"Peers":[`), line...), "]}"...)
	h.answer(w, r, body, n, err)
}

// incomplete marks a 200 built on results that may not be all there is
// (err ended the lookup): not cacheable, with the backends header when
// err is a *find.PartialError.
func (h *Handler) incomplete(r *http.Request, hdr http.Header, err error) {
	hdr.Set("Cache-Control", cacheNoStore)
	if pe, ok := errors.AsType[*find.PartialError](err); ok {
		hdr.Set(find.HeaderBackends, backendsValue(pe))
		return
	}
	if r.Context().Err() == nil {
		h.cfg.log.Error("routing: backend failed after some results", "path", r.URL.Path, "err", err)
	}
}

func backendsValue(pe *find.PartialError) string {
	return strconv.Itoa(pe.Answered) + "/" + strconv.Itoa(pe.Total)
}

// failed answers a lookup that ended with err and left nothing to send:
// 504 when every backend that did not answer timed out, 502 when some
// failed otherwise, 503 when the client went away, else 500. None is
// cacheable.
func (h *Handler) failed(w http.ResponseWriter, r *http.Request, err error) {
	hdr := w.Header()
	hdr.Set("Cache-Control", cacheNoStore)
	if pe, ok := errors.AsType[*find.PartialError](err); ok {
		hdr.Set(find.HeaderBackends, backendsValue(pe))
		failed := pe.Total - pe.Answered
		status := http.StatusBadGateway
		if failed > 0 && pe.TimedOut == failed {
			status = http.StatusGatewayTimeout
		}
		http.Error(w, fmt.Sprintf("no answer: %d of %d backends did not answer (%d timed out)", failed, pe.Total, pe.TimedOut), status)
		return
	}
	if r.Context().Err() != nil {
		http.Error(w, "request canceled", http.StatusServiceUnavailable)
		return
	}
	h.cfg.log.Error("routing: backend failed", "path", r.URL.Path, "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}
