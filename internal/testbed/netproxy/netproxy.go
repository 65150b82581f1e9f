package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds a dial of the target.
const dialTimeout = 5 * time.Second

// queueLen is how many chunks a direction buffers before the proxy stops
// reading from its source.
const queueLen = 64

// acceptRetry is the pause after a failed Accept.
const acceptRetry = 5 * time.Millisecond

// chunkSize is the largest chunk read at once.
const chunkSize = 32 << 10

// Proxy is a running loopback TCP proxy. Create it with [Listen].
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu       sync.Mutex
	up, down time.Duration
	paused   bool
	changed  chan struct{} // closed and replaced at every change of the settings
	links    map[*link]struct{}
	closed   bool
}

// Listen starts a proxy on 127.0.0.1 (a free port) that forwards every
// connection to target, a host:port. It dials target only when a client
// connects. The caller must Close the proxy.
func Listen(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("netproxy: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netproxy: listen: %w", err)
	}
	p := &Proxy{
		ln:      ln,
		target:  target,
		changed: make(chan struct{}),
		links:   make(map[*link]struct{}),
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients connect to (127.0.0.1:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// SetDelay sets the one-way delays: up for bytes from the client to the
// target, down for bytes from the target to the client. Zero forwards at
// once; negative delays count as zero. It applies to bytes already queued.
func (p *Proxy) SetDelay(up, down time.Duration) {
	p.mu.Lock()
	p.up, p.down = max(up, 0), max(down, 0)
	p.notify()
	p.mu.Unlock()
}

// Delay returns the one-way delays, up and down.
func (p *Proxy) Delay() (up, down time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up, p.down
}

// Pause stalls the traffic of every connection, open or future, in both
// directions, until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	p.paused = true
	p.notify()
	p.mu.Unlock()
}

// Resume lets the traffic flow again after Pause; queued bytes are
// written first, in order, each no earlier than its delay allows.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.paused = false
	p.notify()
	p.mu.Unlock()
}

// Paused reports whether the proxy is paused.
func (p *Proxy) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Cut closes every open connection, both the client's and the target's
// side, and returns how many it closed. Bytes still queued are dropped.
// The proxy keeps accepting new connections.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	ls := make([]*link, 0, len(p.links))
	for l := range p.links {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	return len(ls)
}

// Conns returns the number of open connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops the proxy: it closes the listener and every connection, and
// returns once all of the proxy's goroutines have exited. It is safe to
// call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	var err error
	if !already {
		if cerr := p.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = fmt.Errorf("netproxy: close: %w", cerr)
		}
	}
	p.Cut()
	p.wg.Wait()
	return err
}

// notify wakes every writer waiting on the settings; p.mu is held.
func (p *Proxy) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// settings returns what a writer in direction up (or down) waits for.
func (p *Proxy) settings(up bool) (delay time.Duration, paused bool, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delay = p.down
	if up {
		delay = p.up
	}
	return delay, p.paused, p.changed
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // aborts dials in flight once the listener is closed
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // such as too many open files: try again
			time.Sleep(acceptRetry)
			continue
		}
		p.wg.Add(1)
		go p.connect(ctx, c)
	}
}

// connect dials the target for the accepted client c and starts
// forwarding.
func (p *Proxy) connect(ctx context.Context, c net.Conn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: dialTimeout}
	s, err := d.DialContext(ctx, "tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	l := &link{p: p, client: c, server: s, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = c.Close()
		_ = s.Close()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	l.ends.Add(2)
	up := make(chan chunk, queueLen)
	down := make(chan chunk, queueLen)
	p.wg.Add(5)
	go l.read(c, up)
	go l.write(s, up, true)
	go l.read(s, down)
	go l.write(c, down, false)
	go func() {
		defer p.wg.Done()
		l.ends.Wait()
		l.close()
	}()
}

// chunk is bytes read at a time; eof marks the end of the stream.
type chunk struct {
	b   []byte
	at  time.Time
	eof bool
}

// link is one proxied connection: the client's side and the target's.
type link struct {
	p              *Proxy
	client, server net.Conn
	ends           sync.WaitGroup // the two writers
	done           chan struct{}  // closed by close
	once           sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		_ = l.server.Close()
		l.p.mu.Lock()
		delete(l.p.links, l)
		l.p.mu.Unlock()
	})
}

// read queues what src sends, stamped with the time it was read, and an
// eof chunk when src's stream ends (or fails).
func (l *link) read(src net.Conn, q chan<- chunk) {
	defer l.p.wg.Done()
	for {
		buf := make([]byte, chunkSize)
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case q <- chunk{b: buf[:n], at: time.Now()}:
			case <-l.done:
				return
			}
		}
		if err != nil {
			select {
			case q <- chunk{at: time.Now(), eof: true}:
			case <-l.done:
			}
			return
		}
	}
}

// write writes the chunks of q to dst, each once the proxy is not paused
// and its delay has passed; up tells which delay applies.
func (l *link) write(dst net.Conn, q <-chan chunk, up bool) {
	defer l.p.wg.Done()
	defer l.ends.Done()
	for {
		var c chunk
		select {
		case c = <-q:
		case <-l.done:
			return
		}
		if !l.due(c.at, up) {
			return
		}
		if c.eof {
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			l.close()
			return
		}
	}
}

// due waits until a chunk read at at may be written: the proxy is not
// paused and the direction's delay has passed. It returns false if the
// link is closed first.
func (l *link) due(at time.Time, up bool) bool {
	for {
		delay, paused, changed := l.p.settings(up)
		if paused {
			select {
			case <-changed:
				continue
			case <-l.done:
				return false
			}
		}
		wait := time.Until(at.Add(delay))
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-changed:
		case <-l.done:
			t.Stop()
			return false
		}
		t.Stop()
	}
}
