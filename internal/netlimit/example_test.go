package netlimit_test

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/indexkit/indexkit/internal/netlimit"
)

// A server's listener is wrapped before it is served: at most 1024
// connections open, 64 of them from one source. The server's deadlines
// (see net/http.Server) keep a slow peer from holding its slots.
func ExampleNewListener() {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := netlimit.NewListener(inner, netlimit.WithMaxConns(1024), netlimit.WithMaxConnsPerIP(64))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src, _ := netlimit.SourceOf(r.RemoteAddr)
		fmt.Fprintln(w, "hello", src)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))
	fmt.Println("accepted:", ln.Stats().Accepted)
	// Output:
	// hello 127.0.0.1
	// accepted: 1
}

// A Rate answers each source's requests until its bucket is empty, then
// says how long to wait.
func ExampleRate() {
	r, err := netlimit.NewRate(1, 2) // 1 a second, 2 at once
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		ok, retryAfter := r.Allow("192.0.2.1")
		fmt.Println(ok, retryAfter > 0)
	}
	ok, _ := r.Allow("198.51.100.7")
	fmt.Println("another source:", ok)
	// Output:
	// true false
	// true false
	// false true
	// another source: true
}
