package indexernode

import (
	"net/http"
	"time"
)

// AnnounceBodyTimeout bounds the reading of a request's body on the ingest
// listener, from the end of its header. An announce is a CBOR or JSON
// message of a few hundred bytes, so a peer still sending one after this
// is holding a connection, not announcing: its request fails (400) and
// its connection is closed, 5 s in instead of the server's ReadTimeout
// (30 s). With the listener's eviction at its connection cap
// (internal/netlimit), this keeps /health and real announces answered
// while slow bodies arrive from many sources.
const AnnounceBodyTimeout = 5 * time.Second

// withBodyDeadline sets the read deadline of each request to h to d after
// its header was read; the server resets it for the connection's next
// request.
func withBodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An error means the connection cannot take a deadline (not a
		// net.Conn's); the server's own ReadTimeout still holds.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		h.ServeHTTP(w, r)
	})
}
