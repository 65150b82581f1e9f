package routing_test

import (
	"strings"
	"testing"

	"github.com/indexkit/indexkit/scatter/routing"
)

// TestPathAndQueryLimitsEdge: a path of exactly MaxPathLen bytes after
// the prefix, and a query of exactly MaxQueryLen bytes, are read (and
// refused, if at all, for what they hold); one byte more is refused for
// its length.
func TestPathAndQueryLimitsEdge(t *testing.T) {
	h := newHandler(t, &fakeBackend{})
	good := testCID(t, 1).String()
	path := func(n int) string { return routing.Prefix + "providers/" + strings.Repeat("b", n-len("providers/")) }
	query := func(n int) string {
		return routing.Prefix + "providers/" + good + "?x=" + strings.Repeat("y", n-len("x="))
	}
	for _, tc := range []struct {
		url, limitMsg string
		refused       bool
	}{
		{path(routing.MaxPathLen), "path longer than", false},
		{path(routing.MaxPathLen + 1), "path longer than", true},
		{query(routing.MaxQueryLen), "query longer than", false},
		{query(routing.MaxQueryLen + 1), "query longer than", true},
	} {
		rec := get(h, tc.url)
		if got := strings.Contains(rec.Body.String(), tc.limitMsg); got != tc.refused {
			t.Errorf("%d bytes: %d %.100q, want refused for its length %v", len(tc.url)-len(routing.Prefix), rec.Code, rec.Body, tc.refused)
		}
	}
}
