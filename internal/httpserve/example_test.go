package httpserve_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/httpserve"
)

// A role serves one listener until its context ends, then stops within
// the shutdown bound.
func ExampleServe() {
	log := slog.New(slog.DiscardHandler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httpserve.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "OK")
	}), log)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eg, gctx := errgroup.WithContext(ctx)
	httpserve.Serve(gctx, eg, "health", srv, ln, 5*time.Second)

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))

	cancel()
	fmt.Println(httpserve.WaitStopped(gctx, eg, log))
	// Output:
	// OK
	// <nil>
}
