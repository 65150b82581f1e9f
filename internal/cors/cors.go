// Package cors holds the method and CORS rule of the read-only routes of
// the find listeners that are not the find API itself (/health, /stats,
// the sampling API, the front end's page and /status.json): every answer carries Access-Control-Allow-Origin: *, OPTIONS is a
// preflight answered 204, and a method outside the route's set gets 405
// with Allow. It matches what scatter/find's handler does for its routes.
//
// It imports the standard library only.
package cors

import "net/http"

// ReadOnly is the method set of a route that only reads.
const ReadOnly = "GET, HEAD, OPTIONS"

// Serve sets the CORS header on w and answers OPTIONS and methods other than
// GET and HEAD itself. It reports whether the request is left for the
// caller to serve.
func Serve(w http.ResponseWriter, r *http.Request) bool {
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodOptions:
		hdr.Set("Allow", ReadOnly)
		hdr.Set("Access-Control-Allow-Methods", ReadOnly)
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			hdr.Set("Access-Control-Allow-Headers", req)
		} else {
			hdr.Set("Access-Control-Allow-Headers", "Accept, Content-Type")
		}
		hdr.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	hdr.Set("Allow", ReadOnly)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}
