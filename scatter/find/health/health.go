package health

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/indexkit/indexkit/internal/cors"
	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// State names of the /health answer.
const (
	Active = "active"
	Frozen = "frozen"
)

// BytesPerEntry is what the reference divides a store's size by for
// EntriesEstimate (go-libipni find/model.Stats).
const BytesPerEntry = 40

// StatsMaxAge is how long a /stats answer is reused: requests within it
// share one count.
const StatsMaxAge = time.Second

// Health is the body of GET /health.
type Health struct {
	Status string // always "ok": the listener answers
	State  string // Active or Frozen
	// ID is the node's peer ID, left out when unknown (a front end).
	ID string `json:",omitempty"`
	// Backends is the number of backends of a front end, left out on an
	// indexer.
	Backends *int `json:",omitempty"`
}

// Stats is the body of GET /stats: the fields of go-libipni's
// find/model.Stats, which its client's GetStats reads, plus Providers.
type Stats struct {
	// EntriesEstimate is the store's size divided by BytesPerEntry, as
	// the reference computes it.
	EntriesEstimate int64
	// EntriesCount is the number of multihashes when the store can count
	// them ([EntryCounter]), else EntriesEstimate again.
	EntriesCount int64
	// EntriesExact reports whether EntriesCount is an exact count (true)
	// or EntriesEstimate again (false): a page shows the count as "about"
	// when it is not exact. On a front end, true when every backend that
	// answered counted exactly.
	EntriesExact bool
	// Providers is the number of provider records.
	Providers int64
	// Backends and BackendsAnswered are set on a front end only: how many
	// backends it has and how many answered; the counts above are then
	// sums over those that answered.
	Backends         *int `json:",omitempty"`
	BackendsAnswered *int `json:",omitempty"`
}

// EntryCounter is the optional capability of a store that counts its
// multihashes: store/memory from its counters (checked against its live
// records once one was removed), store/pebble and store/leveldb by a scan,
// while the index is small. A store without it,
// or whose CountEntries returns an error wrapping [store.ErrNotCounted],
// gets EntriesCount = EntriesEstimate and EntriesExact false.
type EntryCounter interface {
	CountEntries(ctx context.Context) (int64, error)
}

// Config says what a [Handler] reports. Every field is optional.
type Config struct {
	// ID is the node's peer ID, reported by /health.
	ID peer.ID
	// Frozen reports whether the node is frozen; nil: never.
	Frozen func() bool
	// Store is counted by /stats.
	Store store.Store
	// Stats, when set, replaces the count of Store: a front end sums its
	// backends' /stats there (see [Sum]).
	Stats func(ctx context.Context) (Stats, error)
	// Backends, when set, is reported by /health (a front end).
	Backends func() int
	// Logger receives the errors behind a 500; nil discards them.
	Logger *slog.Logger
}

// Handler serves GET /health and GET /stats; see the package doc.
type Handler struct {
	cfg Config

	mu     sync.Mutex // one count at a time; guards the fields below
	last   Stats
	lastAt time.Time
}

// NewHandler returns a Handler for cfg.
func NewHandler(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg}
}

// ServeHTTP implements [http.Handler] for the paths /health and /stats.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !cors.Serve(w, r) {
		return
	}
	switch r.URL.Path {
	case "/health":
		h.health(w)
	case "/stats":
		h.stats(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) health(w http.ResponseWriter) {
	body := Health{Status: "ok", State: Active}
	if h.cfg.Frozen != nil && h.cfg.Frozen() {
		body.State = Frozen
	}
	if h.cfg.ID != "" {
		body.ID = h.cfg.ID.String()
	}
	if h.cfg.Backends != nil {
		n := h.cfg.Backends()
		body.Backends = &n
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, body)
}

func (h *Handler) stats(w http.ResponseWriter, r *http.Request) {
	st, err := h.count(r.Context())
	if err != nil {
		h.cfg.Logger.Error("stats", "err", err)
		http.Error(w, "stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, st)
}

// count returns the stats, reusing an answer younger than StatsMaxAge.
func (h *Handler) count(ctx context.Context) (Stats, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.lastAt.IsZero() && time.Since(h.lastAt) < StatsMaxAge {
		return h.last, nil
	}
	var (
		st  Stats
		err error
	)
	switch {
	case h.cfg.Stats != nil:
		st, err = h.cfg.Stats(ctx)
	case h.cfg.Store != nil:
		st, err = Count(ctx, h.cfg.Store)
	default:
		err = errors.New("nothing to count")
	}
	if err != nil {
		return Stats{}, err
	}
	h.last, h.lastAt = st, time.Now()
	return st, nil
}

// Count returns the Stats of s: EntriesEstimate from its Size, EntriesCount
// from [EntryCounter] when s has it and counts (EntriesExact then true),
// and Providers by listing its provider records (one engine scan of a few
// thousand small records).
func Count(ctx context.Context, s store.Store) (Stats, error) {
	var st Stats
	size, err := s.Size(ctx)
	if err != nil {
		return st, err
	}
	st.EntriesEstimate = size / BytesPerEntry
	st.EntriesCount = st.EntriesEstimate
	if c, ok := s.(EntryCounter); ok {
		n, err := c.CountEntries(ctx)
		switch {
		case err == nil:
			st.EntriesCount, st.EntriesExact = n, true
		case !errors.Is(err, store.ErrNotCounted):
			return st, err
		}
	}
	for _, err := range s.Providers(ctx) {
		if err != nil {
			return st, err
		}
		st.Providers++
	}
	return st, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
