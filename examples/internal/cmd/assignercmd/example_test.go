package assignercmd_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/assignercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
)

// The assigner program in process over a pool of one indexer (a stub
// whose admin API has nothing assigned and is not frozen): its Prometheus metrics, fed by
// the role's hooks, count the polls of the indexer.
func ExampleMain() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/admin/status" {
			fmt.Fprint(w, `{"Frozen":false,"ID":"12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN","Usage":1}`)
			return
		}
		w.WriteHeader(http.StatusNoContent) // nothing assigned, nothing preferred
	}))
	defer indexer.Close()
	u := indexer.URL
	run, stop := context.WithCancel(ctx)
	tap := logtap.New(io.Discard)
	done := make(chan error, 1)
	go func() {
		done <- assignercmd.Main(run, []string{"-indexer", "id=indexer-0,admin=" + u + "/admin,find=" + u + "/find,ingest=" + u + "/ingest",
			"-listen", "127.0.0.1:0", "-state-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-p2p-verify=false"}, tap)
		tap.Close()
	}()
	metrics, err := tap.Addr(ctx, "metrics")
	if err != nil {
		panic(err)
	}
	for {
		if line := scrape("http://"+metrics+"/metrics", `indexkit_assigner_polls_total{indexer="indexer-0"`); line != "" {
			fmt.Println(line[:strings.LastIndexByte(line, ' ')])
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// indexkit_assigner_polls_total{indexer="indexer-0",result="ok"}
	// stopped: <nil>
}

// scrape returns the first line of GET url that starts with series, or
// "".
func scrape(url, series string) string {
	resp, err := http.Get(url)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), series) {
			return sc.Text()
		}
	}
	return ""
}
