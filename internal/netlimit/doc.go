// Package netlimit bounds what remote peers can hold of a server: the
// connections of a listener, in total and per source ([Listener]), and the
// rate of requests per source ([Rate]).
//
// # Model
//
// A source is the remote IP address of a connection or request, with
// IPv4-mapped IPv6 addresses unmapped and IPv6 addresses cut to their /64
// prefix ([Source], [SourceOf]): one host of a residential or cloud IPv6
// network usually holds a whole /64, so counting single IPv6 addresses
// would count nothing.
//
// A [Listener] wraps a net.Listener with two caps:
//
//   - the total cap ([WithMaxConns], [DefaultMaxConns]): while that many
//     accepted connections are open, each new connection evicts one: the
//     open connection whose current exchange began the longest ago is
//     closed ([Stats].Evicted). An exchange begins at the accept and
//     whenever the direction of the bytes turns: a request's first bytes
//     after an answer, an answer's first bytes after a request. So the
//     victim is the connection that has been idle, sending its request, or
//     receiving its answer for the longest time; never the new one, which
//     is not evicted before cap newer exchanges have begun.
//   - the per-source cap ([WithMaxConnsPerIP], [DefaultMaxConnsPerIP]): a
//     connection from a source that already has that many open is closed at
//     once, without reading a byte, and counted in [Stats].Rejected. One
//     source cannot take the total cap for itself.
//
// Why evict rather than wait, as golang.org/x/net/netutil.LimitListener
// does (and this package did): peers that hold connections open (a silent
// connect, a header or a body sent a byte a second), from enough sources
// to stay under the per-source cap, fill the total cap, and a waiting
// Accept leaves every new connection in the kernel's backlog until the
// server's deadlines close old ones: a health check or a two-hundred-byte
// announce waits for as long as the attack lasts. With eviction, a new
// connection is accepted at once and the slow peers are the ones that
// lose their connections, since their exchanges are the oldest; a short
// request is done long before cap newer connections arrive. The cost is
// that, at the cap, a flood of new connections cuts the longest exchanges
// (an hour-long stream, a large upload) of others; below the cap nothing
// is evicted.
//
// Neither cap is a deadline: below the total cap a connection holds its
// slot until it is closed. Give the server read and write deadlines
// (http.Server's ReadHeaderTimeout, ReadTimeout, WriteTimeout and
// IdleTimeout), and shorter ones to the requests that are small by nature
// (http.ResponseController's SetReadDeadline in their handler), so that a
// slow or silent peer cannot hold one for long.
//
// A [Rate] is a token bucket per key (a source's string, a peer ID):
// perSecond tokens a second up to burst. Its table of keys is bounded
// ([WithMaxKeys], [DefaultMaxKeys]): beyond it the least recently seen key
// is forgotten, which only gives that key a full bucket again. So a flood of
// distinct sources costs a bounded amount of memory.
//
// # Lifecycle and concurrency
//
// [NewListener] and [NewRate] start nothing. A Listener's Close closes the
// wrapped listener, which ends Accept; connections already accepted stay
// open until their own Close (or an eviction), which frees their slots
// (once, however many times it is called). Both types are safe for
// concurrent use.
//
// # Errors
//
// Constructors fail with errors wrapping [ErrInvalidOption]. Accept
// returns the wrapped listener's errors, and net.ErrClosed after Close.
package netlimit
