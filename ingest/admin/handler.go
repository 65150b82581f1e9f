package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/internal/localonly"
)

// The routes of the admin API, as the reference serves them (and
// GET /ingest/status, which is ours).
const (
	pathAssign       = "/ingest/assign/"   // + publisher ID
	pathUnassign     = "/ingest/unassign/" // + publisher ID
	pathHandoff      = "/ingest/handoff/"  // + publisher ID
	pathSync         = "/ingest/sync/"     // + publisher ID
	pathAssigned     = "/ingest/assigned"
	pathPreferred    = "/ingest/preferred"
	pathStatus       = "/status"
	pathFreeze       = "/freeze"
	pathIngestStatus = "/ingest/status"
)

// route is one endpoint: its method and whether a publisher ID follows
// the path.
type route struct {
	method string
	withID bool
	serve  func(h *handler, w http.ResponseWriter, r *http.Request, publisher peer.ID)
}

var exactRoutes = map[string]route{
	pathAssigned:     {method: http.MethodGet, serve: (*handler).assigned},
	pathPreferred:    {method: http.MethodGet, serve: (*handler).preferred},
	pathStatus:       {method: http.MethodGet, serve: (*handler).status},
	pathFreeze:       {method: http.MethodPut, serve: (*handler).freeze},
	pathIngestStatus: {method: http.MethodGet, serve: (*handler).ingestStatus},
}

var idRoutes = []struct {
	prefix string
	route
}{
	{pathAssign, route{method: http.MethodPost, withID: true, serve: (*handler).assign}},
	{pathUnassign, route{method: http.MethodPut, withID: true, serve: (*handler).unassign}},
	{pathHandoff, route{method: http.MethodPost, withID: true, serve: (*handler).handoff}},
	{pathSync, route{method: http.MethodPost, withID: true, serve: (*handler).sync}},
}

type handler struct {
	node     Node
	cfg      handlerConfig
	tokenSum [sha256.Size]byte
	// local refuses foreign Hosts and web pages; nil with a token.
	local *localonly.Guard
}

// NewHandler returns the admin API of node: the routes, methods, status
// codes and JSON of the package documentation's table. The handler does
// not listen (serve it on [DefaultListenAddr] unless configured
// otherwise), starts no goroutine, and is safe for concurrent use when
// node is. A nil node answers every route 503. An option given a value
// out of range fails it with [ErrInvalidOption].
func NewHandler(node Node, opts ...Option) (http.Handler, error) {
	h := &handler{node: node, cfg: defaultHandlerConfig()}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&h.cfg); err != nil {
			return nil, err
		}
	}
	local, err := localonly.New("the admin API", "allow it with -admin-hosts (admin.WithAllowedHosts) or set a token", h.cfg.hosts...)
	if err != nil {
		return nil, fmt.Errorf("%w: WithAllowedHosts: %w", ErrInvalidOption, err)
	}
	if h.cfg.token != "" {
		h.tokenSum = sha256.Sum256([]byte(h.cfg.token))
	} else {
		h.local = local
	}
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.local.Check(r); err != nil {
		h.refuseNotLocal(w, r, err)
		return
	}
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="indexer admin"`)
		h.writeError(w, r, ErrUnauthorized, "")
		return
	}
	rt, rest, ok := lookup(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != rt.method {
		// As the reference: OPTIONS is answered 200 with Allow.
		w.Header().Set("Allow", rt.method)
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.node == nil {
		h.writeError(w, r, ErrUnavailable, "")
		return
	}
	var publisher peer.ID
	if rt.withID {
		id, err := parsePeerID(rest)
		if err != nil {
			h.badRequest(w, r, http.StatusBadRequest, err.Error())
			return
		}
		publisher = id
	}
	rt.serve(h, w, r, publisher)
}

// lookup finds the route of path; rest is what follows an ID route's
// prefix.
func lookup(path string) (rt route, rest string, ok bool) {
	if rt, ok := exactRoutes[path]; ok {
		return rt, "", true
	}
	for _, ir := range idRoutes {
		if rest, ok := strings.CutPrefix(path, ir.prefix); ok {
			return ir.route, rest, true
		}
	}
	return route{}, "", false
}

// parsePeerID decodes the publisher ID of a path; the error names it.
func parsePeerID(s string) (peer.ID, error) {
	if s == "" {
		return "", errors.New("missing peer id")
	}
	if strings.Contains(s, "/") {
		return "", fmt.Errorf("bad peer id %q", clip(s))
	}
	id, err := peer.Decode(s)
	if err != nil {
		return "", fmt.Errorf("bad peer id %q: %v", clip(s), err)
	}
	return id, nil
}

// clip bounds an echoed input.
func clip(s string) string {
	const n = 128
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (h *handler) authorized(r *http.Request) bool {
	if h.cfg.token == "" {
		return true
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	// Hashing first makes the comparison constant-time in the length too.
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], h.tokenSum[:]) == 1
}

// ----- assignment -----

func (h *handler) assign(w http.ResponseWriter, r *http.Request, publisher peer.ID) {
	if err := h.node.Assign(r.Context(), publisher); err != nil {
		h.writeError(w, r, err, publisher)
		return
	}
	h.cfg.log.Info("publisher assigned", "publisher", publisher)
	w.WriteHeader(http.StatusOK)
}

func (h *handler) unassign(w http.ResponseWriter, r *http.Request, publisher peer.ID) {
	if err := h.node.Unassign(r.Context(), publisher); err != nil {
		h.writeError(w, r, err, publisher)
		return
	}
	h.cfg.log.Info("publisher unassigned", "publisher", publisher)
	w.WriteHeader(http.StatusOK)
}

func (h *handler) assigned(w http.ResponseWriter, r *http.Request, _ peer.ID) {
	list, err := h.node.Assigned(r.Context())
	if err != nil {
		h.writeError(w, r, err, "")
		return
	}
	h.writeList(w, r, len(list), list)
}

func (h *handler) preferred(w http.ResponseWriter, r *http.Request, _ peer.ID) {
	list, err := h.node.Preferred(r.Context())
	if err != nil {
		h.writeError(w, r, err, "")
		return
	}
	h.writeList(w, r, len(list), list)
}

func (h *handler) handoff(w http.ResponseWriter, r *http.Request, publisher peer.ID) {
	data, ok := h.readBody(w, r)
	if !ok {
		return
	}
	req, err := parseHandoff(data)
	if err != nil {
		h.badRequest(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := h.node.Handoff(r.Context(), publisher, req); err != nil {
		h.writeError(w, r, err, publisher)
		return
	}
	h.cfg.log.Info("publisher handed off", "publisher", publisher, "frozen", req.FrozenID)
	w.WriteHeader(http.StatusOK)
}

// parseHandoff decodes and checks a handoff body, whatever its
// Content-Type (the reference assigner sends none).
func parseHandoff(data []byte) (HandoffRequest, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return HandoffRequest{}, errors.New("missing handoff data")
	}
	var body struct {
		FrozenID  string
		FrozenURL string
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return HandoffRequest{}, fmt.Errorf("bad handoff data: %v", err)
	}
	if body.FrozenID == "" {
		return HandoffRequest{}, errors.New("bad handoff data: missing FrozenID")
	}
	frozenID, err := peer.Decode(body.FrozenID)
	if err != nil {
		return HandoffRequest{}, fmt.Errorf("bad handoff data: bad FrozenID %q: %v", clip(body.FrozenID), err)
	}
	if err := checkFrozenURL(body.FrozenURL); err != nil {
		return HandoffRequest{}, fmt.Errorf("bad handoff data: %v", err)
	}
	return HandoffRequest{FrozenID: frozenID, FrozenURL: body.FrozenURL}, nil
}

func checkFrozenURL(s string) error {
	if s == "" {
		return errors.New("missing FrozenURL")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad FrozenURL %q: want an absolute http or https URL", clip(s))
	}
	return nil
}

// ----- node state -----

func (h *handler) status(w http.ResponseWriter, r *http.Request, _ peer.ID) {
	st, err := h.node.Status(r.Context())
	if err != nil {
		h.writeError(w, r, err, "")
		return
	}
	h.writeJSON(w, r, st)
}

func (h *handler) freeze(w http.ResponseWriter, r *http.Request, _ peer.ID) {
	f, ok := h.node.(Freezer)
	if !ok {
		h.writeError(w, r, fmt.Errorf("freeze: %w", ErrNotSupported), "")
		return
	}
	if err := f.Freeze(r.Context()); err != nil {
		h.writeError(w, r, err, "")
		return
	}
	h.cfg.log.Info("indexer frozen through the admin API")
	w.WriteHeader(http.StatusOK)
}

// ----- ingestion -----

func (h *handler) sync(w http.ResponseWriter, r *http.Request, publisher peer.ID) {
	s, ok := h.node.(Syncer)
	if !ok {
		h.writeError(w, r, fmt.Errorf("sync: %w", ErrNotSupported), publisher)
		return
	}
	req, err := parseSyncQuery(r.URL.Query())
	if err != nil {
		h.badRequest(w, r, http.StatusBadRequest, err.Error())
		return
	}
	data, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if req.Addr, err = parseSyncAddr(data); err != nil {
		h.badRequest(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.Sync(r.Context(), publisher, req); err != nil {
		h.writeError(w, r, err, publisher)
		return
	}
	h.cfg.log.Info("sync started", "publisher", publisher, "depth", req.Depth, "resync", req.Resync)
	w.WriteHeader(http.StatusAccepted)
}

func parseSyncQuery(q url.Values) (SyncRequest, error) {
	var req SyncRequest
	if s := q.Get("depth"); s != "" {
		d, err := strconv.Atoi(s)
		if err != nil || d < -1 {
			return req, fmt.Errorf("bad depth %q: want an integer ≥ -1", clip(s))
		}
		req.Depth = d
	}
	if s := q.Get("resync"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return req, fmt.Errorf("bad resync %q: want a boolean", clip(s))
		}
		req.Resync = b
	}
	return req, nil
}

// parseSyncAddr decodes the optional sync body: a JSON string holding a
// multiaddr.
func parseSyncAddr(data []byte) (multiaddr.Multiaddr, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("bad sync address: want a JSON string: %v", err)
	}
	addr, err := multiaddr.NewMultiaddr(s)
	if err != nil {
		return nil, fmt.Errorf("bad sync address %q: %v", clip(s), err)
	}
	return addr, nil
}

func (h *handler) ingestStatus(w http.ResponseWriter, r *http.Request, _ peer.ID) {
	rep, ok := h.node.(IngestReporter)
	if !ok {
		h.writeError(w, r, fmt.Errorf("ingest status: %w", ErrNotSupported), "")
		return
	}
	pg, err := parsePageQuery(r.URL.Query())
	if err != nil {
		h.badRequest(w, r, http.StatusBadRequest, err.Error())
		return
	}
	list, err := rep.IngestStatus(r.Context())
	if err != nil {
		h.writeError(w, r, err, "")
		return
	}
	list, more := pg.cut(list)
	if more {
		w.Header().Set("Link", nextLink(list[len(list)-1].Publisher, pg.limit))
	}
	h.writeList(w, r, len(list), list)
}

// page is the query of a paginated list: the entries after a publisher,
// at most limit of them.
type page struct {
	after peer.ID // "": from the first
	limit int
}

// parsePageQuery reads ?limit=N&after=<publisher>: limit from 1 to
// [MaxIngestStatusLimit], default [DefaultIngestStatusLimit]; after a
// peer ID.
func parsePageQuery(q url.Values) (page, error) {
	pg := page{limit: DefaultIngestStatusLimit}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxIngestStatusLimit {
			return pg, fmt.Errorf("bad limit %q: want an integer from 1 to %d", clip(s), MaxIngestStatusLimit)
		}
		pg.limit = n
	}
	if s := q.Get("after"); s != "" {
		id, err := peer.Decode(s)
		if err != nil {
			return pg, fmt.Errorf("bad after %q: want the publisher peer ID of the last entry of the previous page: %v", clip(s), err)
		}
		pg.after = id
	}
	return pg, nil
}

// cut sorts list by publisher (its string form, the cursor's order) and
// returns the page pg asks for, and whether entries follow it. The
// publisher named by after need not be in list any more.
func (pg page) cut(list []PublisherStatus) ([]PublisherStatus, bool) {
	type keyed struct {
		key string
		ps  PublisherStatus
	}
	ks := make([]keyed, len(list))
	for i, ps := range list {
		ks[i] = keyed{ps.Publisher.String(), ps}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	start := 0
	if pg.after != "" {
		after := pg.after.String()
		start, _ = slices.BinarySearchFunc(ks, after, func(k keyed, s string) int { return strings.Compare(k.key, s) })
		for start < len(ks) && ks[start].key <= after {
			start++
		}
	}
	end := min(start+pg.limit, len(ks))
	out := make([]PublisherStatus, 0, end-start)
	for _, k := range ks[start:end] {
		out = append(out, k.ps)
	}
	return out, end < len(ks)
}

// nextLink is the Link header of a page that has a next one: a
// query-only reference (RFC 3986 5.2: same path), so that it holds
// wherever the handler is mounted.
func nextLink(last peer.ID, limit int) string {
	q := url.Values{"after": {last.String()}, "limit": {strconv.Itoa(limit)}}
	return "<?" + q.Encode() + `>; rel="next"`
}

// ----- responses -----

// readBody reads the bounded request body; on failure it has answered.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.badRequest(w, r, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("request body larger than %d bytes", h.cfg.maxBody))
			return nil, false
		}
		h.badRequest(w, r, http.StatusBadRequest, "cannot read request body")
		return nil, false
	}
	return data, true
}

const contentTypeJSON = "application/json; charset=utf-8"

// writeList answers a list: 204 when empty, as the reference.
func (h *handler) writeList(w http.ResponseWriter, r *http.Request, n int, list any) {
	if n == 0 {
		w.Header().Set("Content-Type", contentTypeJSON)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.writeJSON(w, r, list)
}

func (h *handler) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		h.writeError(w, r, fmt.Errorf("encoding response: %w", err), "")
		return
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// badRequest answers a request the handler itself rejects.
func (h *handler) badRequest(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.cfg.log.Info("admin request rejected", "method", r.Method, "path", clip(r.URL.Path), "status", status, "err", msg)
	w.Header().Set(ErrorHeader, "bad-request")
	http.Error(w, msg, status)
}

// refuseNotLocal answers a request the handler without a token refuses
// (a foreign Host, a web page): the refusal's status (421, 403), the code
// of [ErrNotLocal] and the refusal's text.
func (h *handler) refuseNotLocal(w http.ResponseWriter, r *http.Request, err error) {
	var ref *localonly.Refusal
	errors.As(err, &ref)
	h.cfg.log.Info("admin request refused", "method", r.Method, "path", clip(r.URL.Path), "status", ref.Status, "err", err)
	w.Header().Set(ErrorHeader, codeNotLocal)
	http.Error(w, ref.Reason, ref.Status)
}

// writeError answers err with its row of the error contract: the status,
// the ErrorHeader code and the fixed body (ErrUpstream: the error's text);
// any other error 500 with its text.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error, publisher peer.ID) {
	attrs := []any{"method", r.Method, "path", clip(r.URL.Path), "err", err}
	if publisher != "" {
		attrs = append(attrs, "publisher", publisher)
	}
	row, ok := wireFor(err)
	if !ok {
		h.cfg.log.Warn("admin request failed", attrs...)
		w.Header().Set(ErrorHeader, codeInternal)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	level := slog.LevelInfo
	if row.status >= 500 && !errors.Is(err, context.Canceled) {
		level = slog.LevelWarn
	}
	h.cfg.log.Log(r.Context(), level, "admin request refused", append(attrs, "status", row.status)...)
	w.Header().Set(ErrorHeader, row.code)
	body := row.body
	if body == "" {
		body = err.Error()
	}
	http.Error(w, body, row.status)
}
