package find_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/scatter/find"
)

// TestBatchLimitsEdge: POST /multihash takes exactly WithBatchLimit
// multihashes in a body of exactly WithBodyLimit bytes; one multihash
// more, or one byte more, is 413.
func TestBatchLimitsEdge(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	mhA, mhB, mhC := findMH(t, 1), findMH(t, 2), findMH(t, 3)
	two := fmt.Sprintf(`{"Multihashes":[%q,%q]}`, b64(mhA), b64(mhB))
	three := fmt.Sprintf(`{"Multihashes":[%q,%q,%q]}`, b64(mhA), b64(mhB), b64(mhC))
	limit := len(three) + 8
	// pad spaces two out to n bytes: the same request, n bytes long.
	pad := func(s string, n int) string { return "{" + strings.Repeat(" ", n-len(s)) + s[1:] }
	s := httptest.NewServer(newHandler(t, &findFake{}, find.WithBatchLimit(2), find.WithBodyLimit(int64(limit))))
	defer s.Close()
	for _, tc := range []struct {
		name, body string
		tooLarge   bool
	}{
		{"2 of 2", two, false},
		{"2 of 2 in exactly the body limit", pad(two, limit), false},
		{"2 of 2 one byte over the body limit", pad(two, limit+1), true},
		{"3 of 2", three, true},
	} {
		resp, body := findRequest{method: "POST", path: "/multihash", body: tc.body}.do(t, s.URL)
		if got := resp.StatusCode == http.StatusRequestEntityTooLarge; got != tc.tooLarge {
			t.Errorf("%s (%d bytes): status %d %q, want 413 %v", tc.name, len(tc.body), resp.StatusCode, body, tc.tooLarge)
		}
	}
}
