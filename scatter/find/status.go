package find

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

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
