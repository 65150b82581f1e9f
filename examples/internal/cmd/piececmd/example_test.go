package piececmd_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/piececmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
)

// The piece program in process with the memory store and no /providers
// to poll: it tells its address in its log and answers on it.
func ExampleMain() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	tap := logtap.New(io.Discard)
	dir, err := os.MkdirTemp("", "piece-example-") // walker state and key
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	done := make(chan error, 1)
	go func() {
		done <- piececmd.Main(run, []string{"-listen", "127.0.0.1:0", "-providers-url", "", "-dir", dir}, tap)
		tap.Close()
	}()
	addr, err := tap.Addr(ctx, "api")
	if err != nil {
		panic(err)
	}
	resp, err := http.Get("http://" + addr + "/ingestion-status/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("status of an unknown provider:", resp.Status)
	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// status of an unknown provider: 404 Not Found
	// stopped: <nil>
}
