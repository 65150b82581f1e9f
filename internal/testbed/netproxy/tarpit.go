package netproxy

import (
	"net"
	"sync"
)

// Tarpit is a listener on 127.0.0.1 that accepts every connection and
// never answers: what a client meets at an address an attacker announced
// to hold its workers. It reads nothing, so a client's request stays in
// the socket buffers until the client gives up.
type Tarpit struct {
	ln    net.Listener
	done  chan struct{}
	mu    sync.Mutex
	conns []net.Conn
}

// ListenTarpit starts a Tarpit on a free port of 127.0.0.1.
func ListenTarpit() (*Tarpit, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &Tarpit{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.mu.Lock()
			t.conns = append(t.conns, c)
			t.mu.Unlock()
		}
	}()
	return t, nil
}

// Addr is the address the Tarpit listens on.
func (t *Tarpit) Addr() *net.TCPAddr { return t.ln.Addr().(*net.TCPAddr) }

// Accepted returns how many connections the Tarpit has accepted.
func (t *Tarpit) Accepted() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// Close stops listening and closes every connection accepted.
func (t *Tarpit) Close() error {
	err := t.ln.Close()
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.conns {
		c.Close()
	}
	t.conns = nil
	return err
}
