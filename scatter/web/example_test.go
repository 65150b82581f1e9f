package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/indexkit/indexkit/scatter/web"
)

// A front end mounts the page and the status beside its find API. Here
// the one backend is a find API without GET /health or /stats, so its
// state is unknown.
func Example() {
	backend := httptest.NewServer(http.NotFoundHandler())
	defer backend.Close()
	status, err := web.NewStatus(func() web.Local {
		return web.Local{Backends: []string{backend.URL}, Lookups: 3}
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/{$}", web.Page())
	mux.Handle("/status.json", status)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
	var rep web.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		panic(err)
	}
	fmt.Println(rec.Code, rep.Lookups, rep.Indexers[0].State, rep.Indexers[0].Error)

	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output:
	// 200 3 unknown no GET /health; no GET /stats
	// 200 text/html; charset=utf-8
}
