package pace_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/indexkit/indexkit/ingest/pace"
)

// A node marks its lookups with the pacer's handler and has its ingest
// take a turn for each piece of CPU work: while lookups come, only
// Config.Workers turns are out at once.
func Example() {
	p := pace.New(pace.Config{Workers: 1})
	find := p.Lookups(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "answer")
	}))
	srv := httptest.NewServer(find)
	defer srv.Close()

	// An ingest worker's piece of work.
	work := func() error {
		if err := p.Acquire(context.Background()); err != nil {
			return err
		}
		defer p.Release()
		// decode and store an entry chunk
		return nil
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
