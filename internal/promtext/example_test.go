package promtext_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/indexkit/indexkit/internal/promtext"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, `requests_total{method="get"} 3`)
		fmt.Fprintln(w, `requests_total{method="put"} 4`)
	}))
	defer srv.Close()
	n, err := promtext.Sum(context.Background(), http.DefaultClient, srv.URL+"/metrics", "requests_total")
	fmt.Println(n, err)
	// Output: 7 <nil>
}
