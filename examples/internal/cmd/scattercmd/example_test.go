package scattercmd_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/scattercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
)

// The scatter program in a goroutine, on free ports, in front of a
// backend that is not there: its /metrics listener answers, and a cancel
// stops it cleanly.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tap := logtap.New(nil)
	done := make(chan error, 1)
	go func() {
		done <- scattercmd.Main(ctx, []string{"-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0",
			"-backends", "http://127.0.0.1:9"}, tap)
		tap.Close()
	}()
	addr, err := tap.Addr(ctx, "metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("metrics:", resp.Status)

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// metrics: 200 OK
	// stopped: <nil>
}
