package indexernode

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A single-key lookup goes to the find handler directly; anything else,
// paths the mux would clean included, goes through the mux.
func TestLookupsFirst(t *testing.T) {
	var got string
	h := lookupsFirst(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = "find" }),
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = "mux" }),
	)
	for path, want := range map[string]string{
		"/multihash/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG":        "find",
		"/cid/bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi": "find",
		"/multihash":                "mux", // the batch POST
		"/multihash/":               "mux",
		"/multihash/../health":      "mux",
		"/multihash/Qm//x":          "mux",
		"/cid/":                     "mux",
		"/health":                   "mux",
		"/routing/v1/providers/baf": "mux",
	} {
		got = ""
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://x"+path, nil))
		if got != want {
			t.Errorf("%s: went to %s, want %s", path, got, want)
		}
	}
}
