package httpserve_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/httpserve"
)

// A node's Run: one server under an errgroup, stopped when the context
// ends.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	log := slog.New(slog.DiscardHandler)
	srv := httpserve.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}), log)

	ctx, stop := context.WithCancel(context.Background())
	eg, gctx := errgroup.WithContext(ctx)
	httpserve.Serve(gctx, eg, "hello", srv, ln, httpserve.ReadHeaderTimeout)

	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	stop()
	fmt.Println("stopped:", httpserve.WaitStopped(gctx, eg, log))
	// Output:
	// 200 hello
	// stopped: <nil>
}
