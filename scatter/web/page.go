package web

import (
	_ "embed"
	"net/http"
	"strconv"

	"github.com/indexkit/indexkit/internal/cors"
)

//go:embed index.html
var page []byte

// Page returns the handler of the page: GET (and HEAD) answer the
// embedded HTML document, OPTIONS a CORS preflight (204), other methods
// 405. Mount it on the front end's root, "/{$}", beside the find API and
// [Status] at "/status.json": the page calls both on its own origin.
func Page() http.Handler { return pageHandler{} }

type pageHandler struct{}

func (pageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !cors.Serve(w, r) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(page)))
	h.Set("X-Content-Type-Options", "nosniff")
	// The page loads nothing from elsewhere, and runs only its own script.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
	w.Write(page)
}
