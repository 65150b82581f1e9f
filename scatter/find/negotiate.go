package find

import (
	"net/http"
	"strconv"
	"strings"
)

// Media types of the find API.
const (
	mediaJSON   = "application/json"
	mediaNDJSON = "application/x-ndjson"
)

// findNegotiate picks the response format from the Accept header: NDJSON when
// ndjsonOK and the client lists it (the server prefers it, as the reference
// does), else JSON when the client accepts JSON or anything; a missing
// Accept header means JSON. It answers 406 itself and returns ok false when
// nothing acceptable is listed.
func findNegotiate(w http.ResponseWriter, r *http.Request, ndjsonOK bool) (ndjson, ok bool) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		return false, true
	}
	var jsonOK, listed bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt == "" {
				continue
			}
			listed = true
			if findAcceptQZero(params) {
				continue
			}
			switch mt {
			case mediaNDJSON:
				ndjson = ndjsonOK
			case mediaJSON, "*/*", "application/*":
				jsonOK = true
			}
		}
	}
	if ndjson {
		return true, true
	}
	if jsonOK || !listed {
		return false, true
	}
	types := mediaJSON
	if ndjsonOK {
		types = mediaJSON + ", " + mediaNDJSON
	}
	http.Error(w, "not acceptable: this resource is available as "+types, http.StatusNotAcceptable)
	return false, false
}

// findAcceptQZero reports whether the parameters of an Accept element hold q=0,
// which excludes the type.
func findAcceptQZero(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}
