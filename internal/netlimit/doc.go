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
//     accepted connections are open, Accept waits for one to close before it
//     accepts the next, as golang.org/x/net/netutil.LimitListener does. New
//     connections queue in the kernel's backlog, unread, instead of being
//     refused: a legitimate client is served late, not turned away, once the
//     server's deadlines have closed the connections that hold the slots.
//   - the per-source cap ([WithMaxConnsPerIP], [DefaultMaxConnsPerIP]): a
//     connection from a source that already has that many open is closed at
//     once, without reading a byte, and counted in [Stats].Rejected. One
//     source cannot take the total cap for itself.
//
// Neither cap is a deadline: a connection holds its slot until it is
// closed. Give the server read and write deadlines (http.Server's
// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout) so that a
// slow or silent peer cannot hold one for ever.
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
// wrapped listener and ends an Accept waiting for a slot; connections
// already accepted stay open until their own Close, which frees their
// slots (once, however many times it is called). Both types are safe for
// concurrent use.
//
// # Errors
//
// Constructors fail with errors wrapping [ErrInvalidOption]. Accept
// returns the wrapped listener's errors, and net.ErrClosed after Close.
package netlimit
