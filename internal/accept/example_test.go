package accept_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/indexkit/indexkit/internal/accept"
)

func Example() {
	for _, h := range []string{"", "application/x-ndjson, application/json", "text/html"} {
		r := httptest.NewRequest("GET", "/cid/x", nil)
		if h != "" {
			r.Header.Set("Accept", h)
		}
		w := httptest.NewRecorder()
		ndjson, ok := accept.Negotiate(w, r, true)
		fmt.Printf("%q: ndjson %v, ok %v, status %d\n", h, ndjson, ok, w.Code)
	}
	// Output:
	// "": ndjson false, ok true, status 200
	// "application/x-ndjson, application/json": ndjson true, ok true, status 200
	// "text/html": ndjson false, ok false, status 406
}
