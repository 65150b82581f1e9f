package sample

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/indexkit/indexkit/internal/cors"
	"github.com/indexkit/indexkit/store"
)

// BeaconHeader is the response header that carries the beacon an answer
// was drawn with (hex, 32 bytes once padded): the request's, or the random
// one drawn for a request without one, so that any answer can be asked for
// again.
const BeaconHeader = "X-Ipni-Sample-Beacon"

// Response is the body of a 200 answer, as in the spec's OpenAPI file:
// {"samples":[{"/":"<CID>"},...]}. Each CID is CIDv1 raw (0x55) of a
// sampled multihash: the index keeps multihashes, not the codec of the CID
// they were advertised under.
type Response struct {
	Samples []Link `json:"samples"`
}

// Link is a CID in dag-json form, {"/":"<CID>"}.
type Link struct {
	CID string `json:"/"`
}

// Handler serves the IPNI multihash-sampling API from a [Source]; see the
// package documentation for the routes and status codes.
type Handler struct {
	src Source
	log *slog.Logger
}

// Option configures a [Handler] ([NewHandler], [NewSourceHandler]).
type Option func(*config) error

type config struct {
	log *slog.Logger
}

// WithLogger sets the logger of the failures that become 5xx answers.
// The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("WithLogger: nil logger")
		}
		c.log = l
		return nil
	}
}

// NewHandler returns a Handler answering from s, an indexer's store:
// NewSourceHandler of [StoreSource](s). If s does not implement
// [store.Sampler], the Handler answers every sampling request with 501.
func NewHandler(s store.Store, opts ...Option) (*Handler, error) {
	if s == nil {
		return nil, errors.New("sample: handler: nil store")
	}
	return NewSourceHandler(StoreSource(s), opts...)
}

// NewSourceHandler returns a Handler answering from src: a front end's
// [First] over its indexers' [Client]s, or any other Source.
func NewSourceHandler(src Source, opts ...Option) (*Handler, error) {
	if src == nil {
		return nil, errors.New("sample: handler: nil source")
	}
	cfg := config{log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("sample: handler: %w", err)
		}
	}
	return &Handler{src: src, log: cfg.log}, nil
}

// ServeHTTP implements [http.Handler]. It expects the full request path,
// starting with [Prefix].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Allow", cors.ReadOnly)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: the sampling API answers GET")
		return
	}
	if !cors.Serve(w, r) {
		return
	}
	path := r.URL.EscapedPath()
	if !strings.HasPrefix(path, Prefix) {
		writeError(w, http.StatusNotFound, "not found: the sampling API is at "+Prefix+"{provider-id}/{context-id}")
		return
	}
	req, err := ParseRequest(path[len(Prefix):], r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	fixed := req.Beacon != nil
	if !fixed {
		req.Beacon = make([]byte, MaxBeacon)
		_, _ = rand.Read(req.Beacon) // never fails (crypto/rand)
	}
	resp, err := h.src.Sample(r.Context(), req)
	if err != nil {
		h.failed(w, r, req, err)
		return
	}
	if resp.Samples == nil {
		resp.Samples = []Link{}
	}
	hdr := w.Header()
	padded := make([]byte, MaxBeacon)
	copy(padded, req.Beacon)
	hdr.Set(BeaconHeader, hex.EncodeToString(padded))
	hdr.Set("Content-Type", "application/json")
	if fixed {
		hdr.Set("Cache-Control", "public, max-age=60")
	} else {
		hdr.Set("Cache-Control", "no-store")
	}
	_ = json.NewEncoder(w).Encode(resp)
}

// failed answers a Source error: 404 and 501 for what the source does not
// hold or cannot sample, 504 or 502 when the sources behind a [First]
// failed, 503 when the client went away, else 500. The body is the spec's
// JSON error, naming the problem.
func (h *Handler) failed(w http.ResponseWriter, r *http.Request, req Request, err error) {
	w.Header().Set("Cache-Control", "no-store")
	var fe *FanoutError
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "no such provider and context ID")
	case errors.Is(err, ErrNotSampled):
		writeError(w, http.StatusNotImplemented, "this context cannot be sampled here: "+notSampledMessage(err))
	case errors.As(err, &fe):
		code := http.StatusBadGateway
		if fe.Failed > 0 && fe.TimedOut == fe.Failed {
			code = http.StatusGatewayTimeout
		}
		h.log.Warn("sample: no source answered", "provider", req.Provider, "err", err)
		writeError(w, code, fmt.Sprintf("no answer: %d of %d indexers failed (%d timed out)", fe.Failed, fe.Total, fe.TimedOut))
	case r.Context().Err() != nil:
		writeError(w, http.StatusServiceUnavailable, "request canceled")
	default:
		h.log.Error("sample: source failed", "provider", req.Provider, "err", err)
		writeError(w, http.StatusInternalServerError, "the store failed")
	}
}

// notSampledMessage says why a context cannot be sampled.
func notSampledMessage(err error) string {
	var (
		se *StatusError
		ue *unsampledError
	)
	switch {
	case errors.As(err, &ue):
		return ue.why
	case errors.As(err, &se):
		return "the indexers that hold this context cannot sample it: they keep no multihash populations, or indexed it before they did"
	case errors.Is(err, store.ErrNotSampled):
		return "this indexer does not keep this context's population: it keeps none, or indexed the context before it kept them and cannot rebuild it (re-ingesting the context, removed and put again, in a store that keeps populations makes it samplable)"
	}
	return "this indexer's store keeps no multihash populations"
}

// writeError answers code with the spec's error body (the OpenAPI file's
// error schema), {"error":"..."}.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}
