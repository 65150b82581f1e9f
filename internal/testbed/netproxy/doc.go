// Package netproxy is a loopback TCP proxy for fault tests: it sits
// between a client and a real server (a redis-server, an HTTP listener)
// and lets the test delay, stall and cut the traffic between them.
//
// # Model
//
// [Listen] listens on 127.0.0.1 on a free port and forwards every
// connection it accepts to the target address, dialling the target once
// per accepted connection. Bytes are forwarded in both directions, in
// order, through a queue per direction:
//
//   - [Proxy.SetDelay] sets a one-way delay per direction, up (client to
//     target) and down (target to client): a chunk read at time t is
//     written at t+delay, so a round trip costs up+down on top of the
//     network. Throughput is not limited. A new delay applies at once to
//     the chunks still queued; order is kept.
//   - [Proxy.Pause] stalls both directions: nothing is written until
//     [Proxy.Resume]. The proxy keeps reading into its queues until they
//     are full (then TCP flow control stalls the sender), and it still
//     accepts and dials new connections, whose bytes stall in the same
//     way: the client sees a network that has stopped delivering, not a
//     refused connection.
//   - [Proxy.Cut] closes every open connection (both sides), as a reset
//     network would; later connections are accepted and forwarded as
//     usual.
//
// A half-close is forwarded: when one side ends its stream, the proxy
// delivers what it queued and then closes the write side towards the
// other. A connection is closed once both directions have ended, or at
// once when a write fails.
//
// # Lifecycle, concurrency, errors
//
// Listen starts the accept loop, as httptest.NewServer does: the proxy is
// test support, and a test needs it running before it can point a client
// at [Proxy.Addr]. [Proxy.Close] stops accepting, closes every connection
// and returns once every goroutine the proxy started has exited; it is
// idempotent. Every method is safe for concurrent use. A failed dial of
// the target closes the accepted connection; there is nobody to report it
// to, and the client sees the connection end.
//
// netproxy is internal test support: it listens on loopback only and
// imports nothing of the module.
//
// # Tarpit
//
// [ListenTarpit] is the other fault a test needs from a network: a
// listener that accepts every connection and never answers, as at an
// address an attacker names so that a client's worker waits on it.
package netproxy
