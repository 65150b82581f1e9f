package sample_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
)

// TestRequestLimitsEdge: a beacon of exactly MaxBeacon bytes, a max of
// exactly MaxSamples and a path of exactly MaxPath bytes are not refused
// for their size; one more is.
func TestRequestLimitsEdge(t *testing.T) {
	st := memory.New()
	defer st.Close()
	h, err := sample.NewHandler(st)
	if err != nil {
		t.Fatal(err)
	}
	srv := server(t, h)
	prov := storetest.PeerID("p").String()
	path := func(n int) string { return prov + "/" + strings.Repeat("A", n-len(prov)-1) }
	for _, tc := range []struct {
		path, limitMsg string
		refused        bool
	}{
		{prov + "/AAAA?beacon=" + strings.Repeat("ab", sample.MaxBeacon), "bad beacon", false},
		{prov + "/AAAA?beacon=" + strings.Repeat("ab", sample.MaxBeacon+1), "bad beacon", true},
		{prov + "/AAAA?max=" + strconv.Itoa(sample.MaxSamples), "bad max", false},
		{prov + "/AAAA?max=" + strconv.Itoa(sample.MaxSamples+1), "bad max", true},
		{path(sample.MaxPath), "limit 1024", false},
		{path(sample.MaxPath + 1), "limit 1024", true},
	} {
		a := get(t, srv.URL, sample.Prefix+tc.path)
		refused := a.code == http.StatusBadRequest && strings.Contains(string(a.body), tc.limitMsg)
		if refused != tc.refused {
			t.Errorf("%.80s: %d %.100q, want refused for its size %v", tc.path, a.code, a.body, tc.refused)
		}
	}
}
