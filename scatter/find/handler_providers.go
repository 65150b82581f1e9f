package find

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/libp2p/go-libp2p/core/peer"
)

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
