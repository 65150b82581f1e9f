package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/localonly"

	"github.com/indexkit/indexkit/internal/httpserve"
)

// ListenPprof binds addr, the value of the -pprof flag, for Go's
// profiles: only a loopback address ("localhost" or a loopback literal),
// since the profiles tell anyone who can read them much about the
// process. Errors start with "-pprof <addr>: ".
func ListenPprof(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-pprof %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-pprof %s: not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-pprof %s: %w", addr, err)
	}
	return ln, nil
}

// ServePprof serves Go's profiles (net/http/pprof) under /debug/pprof/ on
// ln, a listener from ListenPprof, under eg until ctx is done, as Serve
// does. It has no token and listens on loopback only, so it answers no web
// page and no rebound name either (internal/localonly): a page's no-cors
// GET of /debug/pprof/profile would otherwise cost the process a CPU
// profile. It has no write timeout, which would cut a CPU profile of more
// than a few seconds.
func ServePprof(ctx context.Context, eg *errgroup.Group, ln net.Listener, shutdownTimeout time.Duration) error {
	guard, err := localonly.New("the pprof listener", "reach it as 127.0.0.1 or localhost")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	httpserve.Serve(ctx, eg, "pprof", &http.Server{Handler: guard.Handler(mux), ReadHeaderTimeout: httpserve.ReadHeaderTimeout}, ln, shutdownTimeout)
	return nil
}
