package netlimit

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a [Listener].
const (
	DefaultMaxConns      = 1024 // open connections of a listener
	DefaultMaxConnsPerIP = 64   // open connections of one source
)

// ipv6SourceBits is the prefix length an IPv6 source is cut to.
const ipv6SourceBits = 64

// Source returns the source a remote address counts as: a IPv4 address
// (unmapped from IPv6 if need be) as it is, an IPv6 address cut to its /64
// prefix, without zone.
func Source(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(ipv6SourceBits)
		return p.Addr()
	}
	return a
}

// SourceOf returns the [Source] of a "host:port" or bare IP address such as
// http.Request.RemoteAddr, and false if it holds no IP address.
func SourceOf(addr string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return Source(ap.Addr()), true
	}
	if a, err := netip.ParseAddr(addr); err == nil {
		return Source(a), true
	}
	return netip.Addr{}, false
}

// sourceOfNet is SourceOf for a net.Addr.
func sourceOfNet(a net.Addr) (netip.Addr, bool) {
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			return netip.Addr{}, false
		}
		return Source(ip), true
	case nil:
		return netip.Addr{}, false
	default:
		return SourceOf(a.String())
	}
}

// Option configures a [Listener].
type Option func(*config) error

type config struct {
	maxConns, maxPerIP int
}

// WithMaxConns sets how many accepted connections may be open at once; at
// the cap, a new connection evicts the open one whose current exchange
// began the longest ago (see the package documentation). 0 removes the
// cap. Default [DefaultMaxConns].
func WithMaxConns(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: max conns %d", ErrInvalidOption, n)
		}
		c.maxConns = n
		return nil
	}
}

// WithMaxConnsPerIP sets how many accepted connections one source may have
// open at once; a connection beyond it is closed at once. 0 removes the
// cap. Default [DefaultMaxConnsPerIP].
func WithMaxConnsPerIP(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: max conns per IP %d", ErrInvalidOption, n)
		}
		c.maxPerIP = n
		return nil
	}
}

// Stats is a snapshot of a [Listener]'s counters.
type Stats struct {
	Open     int    // accepted connections not closed yet
	Sources  int    // distinct sources of the open connections
	Accepted uint64 // connections returned by Accept since NewListener
	Rejected uint64 // connections closed at once: their source was at its cap
	Evicted  uint64 // open connections closed to make room at the total cap
}

// Listener is a net.Listener with a cap on its open connections, in total
// and per source. See the package documentation.
type Listener struct {
	inner net.Listener
	cfg   config

	mu    sync.Mutex // guards perIP and conns
	perIP map[netip.Addr]int
	conns map[*conn]struct{} // the open connections, for eviction

	open                        atomic.Int64
	accepted, rejected, evicted atomic.Uint64
}

var _ net.Listener = (*Listener)(nil)

// NewListener returns ln with the caps of opts. It takes ln over: closing
// the Listener closes ln.
func NewListener(ln net.Listener, opts ...Option) (*Listener, error) {
	if ln == nil {
		return nil, fmt.Errorf("%w: nil listener", ErrInvalidOption)
	}
	cfg := config{maxConns: DefaultMaxConns, maxPerIP: DefaultMaxConnsPerIP}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	return &Listener{inner: ln, cfg: cfg, perIP: make(map[netip.Addr]int), conns: make(map[*conn]struct{})}, nil
}

// Accept waits for a connection. A connection whose source is at its cap
// is closed and Accept goes on waiting for the next one. At the total cap,
// the connection it returns evicts the open one whose current exchange
// began the longest ago ([Stats].Evicted). It returns the wrapped
// listener's errors (net.ErrClosed once the Listener is closed).
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			return nil, err
		}
		src, ok := sourceOfNet(c.RemoteAddr())
		nc := &conn{Conn: c, l: l, src: src, counted: ok}
		nc.since.Store(time.Now().UnixNano())
		victim, admitted := l.admit(nc)
		if !admitted {
			c.Close()
			l.rejected.Add(1)
			continue
		}
		if victim != nil {
			victim.Close()
			l.evicted.Add(1)
		}
		l.accepted.Add(1)
		return nc, nil
	}
}

// admit counts c if its source is below its cap (else it counts nothing
// and reports false), and at the total cap returns the connection to
// evict for it: the one whose exchange began the longest ago.
func (l *Listener) admit(c *conn) (victim *conn, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.counted {
		if l.cfg.maxPerIP > 0 && l.perIP[c.src] >= l.cfg.maxPerIP {
			return nil, false
		}
		l.perIP[c.src]++
	}
	if l.cfg.maxConns > 0 && len(l.conns) >= l.cfg.maxConns {
		oldest := int64(0)
		for o := range l.conns {
			if since := o.since.Load(); victim == nil || since < oldest {
				victim, oldest = o, since
			}
		}
		delete(l.conns, victim) // no other Accept picks it too
	}
	l.conns[c] = struct{}{}
	l.open.Add(1)
	return victim, true
}

// Close closes the wrapped listener, which ends Accept. Connections
// already accepted stay open.
func (l *Listener) Close() error { return l.inner.Close() }

// Addr returns the wrapped listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Stats returns a snapshot of the counters.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	sources := len(l.perIP)
	l.mu.Unlock()
	return Stats{
		Open:     int(l.open.Load()),
		Sources:  sources,
		Accepted: l.accepted.Load(),
		Rejected: l.rejected.Load(),
		Evicted:  l.evicted.Load(),
	}
}

// conn is an accepted connection; its first Close frees its slots.
type conn struct {
	net.Conn
	l       *Listener
	src     netip.Addr
	counted bool // src is counted in l.perIP
	once    sync.Once

	// dir is the direction of the last bytes moved (dirRead, dirWrite; 0
	// before any), since when the current exchange began, in Unix
	// nanoseconds: the accept, or the last change of direction (a
	// request's first bytes, an answer's first bytes).
	dir   atomic.Uint32
	since atomic.Int64
}

// Directions of conn.dir.
const (
	dirRead uint32 = iota + 1
	dirWrite
)

// Read reads from the connection; the first bytes after a write (or after
// the accept) begin a new exchange.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.turn(dirRead)
	}
	return n, err
}

// Write writes to the connection; the first bytes after a read begin a
// new exchange.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.turn(dirWrite)
	}
	return n, err
}

// turn records bytes moved in direction d, and the time if the direction
// changed.
func (c *conn) turn(d uint32) {
	if c.dir.Load() != d && c.dir.Swap(d) != d {
		c.since.Store(time.Now().UnixNano())
	}
}

// Close frees the connection's slots, then closes it: the peer cannot see
// the close before a new connection of its would be counted.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.counted {
			if c.l.perIP[c.src]--; c.l.perIP[c.src] <= 0 {
				delete(c.l.perIP, c.src)
			}
		}
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.open.Add(-1)
	})
	return c.Conn.Close()
}

// errNoCloseWrite is CloseWrite's error for a connection without half-close.
var errNoCloseWrite = errors.New("netlimit: connection cannot close its write side")

// CloseWrite shuts down the writing side of a TCP connection (net/http does
// so before closing a connection whose request body it did not read).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errNoCloseWrite
}
