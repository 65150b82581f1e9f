package health_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/store/memory"
)

// An indexer mounts the handler at /health and /stats of its find listener.
func Example() {
	st := memory.New()
	defer st.Close()
	frozen := false
	h := health.NewHandler(health.Config{Store: st, Frozen: func() bool { return frozen }})
	mux := http.NewServeMux()
	mux.Handle("/health", h)
	mux.Handle("/stats", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, path := range []string{"/health", "/stats"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.StatusCode, " ", string(body))
	}
	// Output:
	// 200 {"Status":"ok","State":"active"}
	// 200 {"EntriesEstimate":0,"EntriesCount":0,"EntriesExact":true,"Providers":0}
}
