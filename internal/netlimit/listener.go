package netlimit

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
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
// the cap, Accept waits for one to close. 0 removes the cap. Default
// [DefaultMaxConns].
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
}

// Listener is a net.Listener with a cap on its open connections, in total
// and per source. See the package documentation.
type Listener struct {
	inner net.Listener
	cfg   config

	slots chan struct{} // one element per open connection; nil without a total cap
	done  chan struct{} // closed by Close
	once  sync.Once

	mu    sync.Mutex // guards perIP
	perIP map[netip.Addr]int

	open               atomic.Int64
	accepted, rejected atomic.Uint64
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
	l := &Listener{inner: ln, cfg: cfg, done: make(chan struct{}), perIP: make(map[netip.Addr]int)}
	if cfg.maxConns > 0 {
		l.slots = make(chan struct{}, cfg.maxConns)
	}
	return l, nil
}

// Accept waits for a free slot, if the total cap is reached, then for a
// connection. A connection whose source is at its cap is closed and Accept
// goes on waiting for the next one. It returns net.ErrClosed once the
// Listener is closed, and the wrapped listener's errors.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			case <-l.done:
				return nil, fmt.Errorf("netlimit: accept: %w", net.ErrClosed)
			}
		}
		c, err := l.inner.Accept()
		if err != nil {
			l.releaseSlot()
			return nil, err
		}
		src, ok := sourceOfNet(c.RemoteAddr())
		if ok && !l.take(src) {
			c.Close()
			l.releaseSlot()
			l.rejected.Add(1)
			continue
		}
		l.open.Add(1)
		l.accepted.Add(1)
		return &conn{Conn: c, l: l, src: src, counted: ok}, nil
	}
}

// take counts a connection of src and reports whether src was below its
// cap (if not, nothing is counted).
func (l *Listener) take(src netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.maxPerIP > 0 && l.perIP[src] >= l.cfg.maxPerIP {
		return false
	}
	l.perIP[src]++
	return true
}

func (l *Listener) releaseSlot() {
	if l.slots != nil {
		<-l.slots
	}
}

// Close closes the wrapped listener and ends the Accept calls waiting for a
// slot. Connections already accepted stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.inner.Close()
}

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
	}
}

// conn is an accepted connection; its first Close frees its slots.
type conn struct {
	net.Conn
	l       *Listener
	src     netip.Addr
	counted bool // src is counted in l.perIP
	once    sync.Once
}

// Close frees the connection's slots, then closes it: the peer cannot see
// the close before a new connection of its would be counted.
func (c *conn) Close() error {
	c.once.Do(func() {
		if c.counted {
			c.l.mu.Lock()
			if c.l.perIP[c.src]--; c.l.perIP[c.src] <= 0 {
				delete(c.l.perIP, c.src)
			}
			c.l.mu.Unlock()
		}
		c.l.open.Add(-1)
		c.l.releaseSlot()
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
