package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"
)

// Deadlines of the servers NewServer makes.
const (
	// ReadHeaderTimeout bounds the reading of a request's header.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds the reading of a whole request, body included:
	// a body sent slowly, or a chunked body that never ends, is cut there.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds the writing of an answer, from the end of the
	// request's header. A streamed answer extends it at each flush (see
	// NewServer).
	WriteTimeout = 60 * time.Second
	// IdleTimeout bounds the wait for the next request of a keep-alive
	// connection.
	IdleTimeout = 2 * time.Minute
)

// NewServer returns a server for h that logs its errors to log at warn
// level, with the deadlines ReadHeaderTimeout, ReadTimeout, WriteTimeout
// and IdleTimeout. A handler that streams its answer (NDJSON find) must
// move the write deadline forward at each flush, with
// http.NewResponseController(w).SetWriteDeadline, or WriteTimeout cuts it.
// Serve it on a listener whose connections are capped (internal/netlimit).
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Serve serves srv on ln under eg until ctx is done, then shuts srv down,
// waiting at most timeout for requests in flight. Past the timeout it
// closes srv, cutting the connections still open (a client still sending
// its body, a slow reader), logs so to srv.ErrorLog, and returns: a
// shutdown is bounded whatever the clients do, and a forced one is not an
// error. Errors start with "<name> server: ".
func Serve(ctx context.Context, eg *errgroup.Group, name string, srv *http.Server, ln net.Listener, timeout time.Duration) {
	eg.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s server: %w", name, err)
		}
		return nil
	})
	eg.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		if err == nil {
			return nil
		}
		srv.Close()
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s server: shutdown: %w", name, err)
		}
		if srv.ErrorLog != nil {
			srv.ErrorLog.Printf("%s server: connections still busy %v after shutdown began; closed them", name, timeout)
		}
		return nil
	})
}

// WaitStopped is the end of a node's Run: it waits for ctx to end, logs
// msg="shutting down" with the cause, waits for everything started under
// eg, and logs msg=stopped (with the error, if any). It returns eg's
// error; context.Canceled, the way a member reports that ctx ended, counts
// as a clean stop.
func WaitStopped(ctx context.Context, eg *errgroup.Group, log *slog.Logger) error {
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx).Error())
	if err := eg.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}
