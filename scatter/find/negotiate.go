package find

import (
	"net/http"

	"github.com/indexkit/indexkit/internal/accept"
)

// Media types of the find API.
const (
	mediaJSON   = accept.JSON
	mediaNDJSON = accept.NDJSON
)

// findNegotiate picks the response format from the Accept header
// (internal/accept): NDJSON when ndjsonOK and the client lists it, else
// JSON; it answers 406 itself and returns ok false when nothing
// acceptable is listed.
func findNegotiate(w http.ResponseWriter, r *http.Request, ndjsonOK bool) (ndjson, ok bool) {
	return accept.Negotiate(w, r, ndjsonOK)
}
