package accept

import (
	"net/http"
	"strconv"
	"strings"
)

// Media types of the find listeners' JSON APIs.
const (
	JSON   = "application/json"
	NDJSON = "application/x-ndjson"
)

// Negotiate picks the answer format of r: NDJSON when ndjsonOK and the
// client lists it (the server prefers it, as the IPNI reference does),
// else JSON. It answers 406 on w itself, naming the types the route
// offers, and returns ok false when nothing acceptable is listed.
func Negotiate(w http.ResponseWriter, r *http.Request, ndjsonOK bool) (ndjson, ok bool) {
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
			if qZero(params) {
				continue
			}
			switch mt {
			case NDJSON:
				ndjson = ndjsonOK
			case JSON, "*/*", "application/*":
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
	types := JSON
	if ndjsonOK {
		types = JSON + ", " + NDJSON
	}
	http.Error(w, "not acceptable: this resource is available as "+types, http.StatusNotAcceptable)
	return false, false
}

// qZero reports whether the parameters of an Accept element hold q=0,
// which excludes the type.
func qZero(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}
