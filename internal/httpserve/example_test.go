package httpserve_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/httpserve"
)

// A role's Run: one server under an errgroup, stopped by the context.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	ctx, cancel := context.WithCancel(context.Background())
	eg, gctx := errgroup.WithContext(ctx)
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") })
	httpserve.Serve(gctx, eg, "api", httpserve.NewServer(hello, logger), ln, httpserve.ReadTimeout)
	done := make(chan error, 1)
	go func() { done <- httpserve.WaitStopped(gctx, eg, logger) }()

	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, string(body))

	cancel()
	fmt.Println("stopped:", <-done)
	fmt.Print(log.String())
	// Output:
	// 200 OK hello
	// stopped: <nil>
	// level=INFO msg="shutting down" cause="context canceled"
	// level=INFO msg=stopped
}
