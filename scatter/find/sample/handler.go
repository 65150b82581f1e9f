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
	"github.com/ipfs/go-cid"
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

// Handler serves the IPNI multihash-sampling API from a store; see the
// package documentation for the routes and status codes.
type Handler struct {
	s   store.Sampler // nil: the store keeps no samples
	log *slog.Logger
}

// Option configures a [Handler] ([NewHandler]).
type Option func(*config) error

type config struct {
	log *slog.Logger
}

// WithLogger sets the logger of the store errors that become 500 answers.
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

// NewHandler returns a Handler answering from s. If s does not implement
// [store.Sampler], the Handler answers every sampling request with 501.
func NewHandler(s store.Store, opts ...Option) (*Handler, error) {
	if s == nil {
		return nil, errors.New("sample: handler: nil store")
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
	h := &Handler{log: cfg.log}
	h.s, _ = s.(store.Sampler)
	return h, nil
}

// ServeHTTP implements [http.Handler]. It expects the full request path,
// starting with [Prefix].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !cors.Serve(w, r) {
		return
	}
	path := r.URL.EscapedPath()
	if !strings.HasPrefix(path, Prefix) {
		http.NotFound(w, r)
		return
	}
	req, err := ParseRequest(path[len(Prefix):], r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if h.s == nil {
		writeError(w, http.StatusNotImplemented, "this indexer's store keeps no multihash samples")
		return
	}
	beacon := req.Beacon
	if beacon == nil {
		beacon = make([]byte, MaxBeacon)
		_, _ = rand.Read(beacon) // never fails (crypto/rand)
	}
	pop, err := h.s.Sample(r.Context(), req.Provider, req.ContextID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no such provider and context ID")
		return
	case errors.Is(err, store.ErrNotSampled):
		writeError(w, http.StatusNotImplemented, "this context was indexed before the store kept samples; it has none")
		return
	case err != nil:
		h.log.Error("sample: store", "provider", req.Provider, "err", err)
		writeError(w, http.StatusInternalServerError, "the store failed")
		return
	}
	resp := Response{Samples: make([]Link, 0, req.Max)}
	for _, i := range Pick(beacon, len(pop), req.Max) {
		resp.Samples = append(resp.Samples, Link{CID: cid.NewCidV1(cid.Raw, pop[i]).String()})
	}
	hdr := w.Header()
	padded := make([]byte, MaxBeacon)
	copy(padded, beacon)
	hdr.Set(BeaconHeader, hex.EncodeToString(padded))
	hdr.Set("Content-Type", "application/json")
	if req.Beacon != nil {
		hdr.Set("Cache-Control", "public, max-age=60")
	} else {
		hdr.Set("Cache-Control", "no-store")
	}
	_ = json.NewEncoder(w).Encode(resp)
}

// writeError answers code with the OpenAPI file's error body,
// {"error":"..."}.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}
