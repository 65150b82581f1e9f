package pace_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/indexkit/indexkit/ingest/pace"
)

// A node marks its lookups with the pacer's handler and has the pacer
// run ingest's pieces of CPU work: below the lookups, and while lookups
// come only Config.Workers at once.
func Example() {
	p := pace.New(pace.Config{Workers: 1})
	find := p.Lookups(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "answer")
	}))
	srv := httptest.NewServer(find)
	defer srv.Close()

	// An ingest worker's piece of work.
	work := func() error {
		return p.Run(context.Background(), func() error {
			// decode and store an entry chunk
			return nil
		})
	}
	fmt.Println("queried before a lookup:", p.Queried())
	resp, err := http.Get(srv.URL + "/multihash/x")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("queried after a lookup:", p.Queried())
	fmt.Println("compactions at once while queried:", p.CompactionLimit())
	fmt.Println("work:", work())
	// Output:
	// queried before a lookup: false
	// queried after a lookup: true
	// compactions at once while queried: 1
	// work: <nil>
}
