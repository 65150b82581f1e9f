package scatternode

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// swapHandler is an [http.Handler] that delegates to a handler which can be
// replaced at any time, without a lock on the request path: [swapHandler.Swap]
// installs a new handler for the requests that arrive from then on, while
// the requests already being served finish on the old one, and reports when
// the last of them has.
//
// Every request is served by exactly one installed handler, from start to
// end. It is safe for concurrent use, Swap included.
type swapHandler struct {
	cur atomic.Pointer[servedHandler]
}

// servedHandler is one installed handler with its requests in flight.
type servedHandler struct {
	h http.Handler
	// state is the number of requests in flight, plus retiredBit once the
	// handler has been replaced.
	state   atomic.Int64
	once    sync.Once
	drained chan struct{}
}

const retiredBit = 1 << 62

func newServedHandler(h http.Handler) *servedHandler {
	return &servedHandler{h: h, drained: make(chan struct{})}
}

// acquire counts a request in, unless the handler has been retired.
func (s *servedHandler) acquire() bool {
	if s.state.Add(1)&retiredBit != 0 {
		s.release()
		return false
	}
	return true
}

// release counts a request out; the last one out of a retired handler
// closes drained.
func (s *servedHandler) release() {
	if s.state.Add(-1) == retiredBit {
		s.once.Do(func() { close(s.drained) })
	}
}

// retire stops new requests from being counted in; drained is closed now
// if none is in flight, else when the last one is released.
func (s *servedHandler) retire() {
	if s.state.Add(retiredBit) == retiredBit {
		s.once.Do(func() { close(s.drained) })
	}
}

// newSwapHandler returns a swapHandler serving with h.
func newSwapHandler(h http.Handler) *swapHandler {
	s := &swapHandler{}
	s.cur.Store(newServedHandler(h))
	return s
}

// ServeHTTP serves r with the handler installed when it arrived.
func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for {
		cur := s.cur.Load()
		// acquire fails only when a Swap retired cur after the Load; the
		// next Load sees its replacement, stored before the retirement.
		if cur.acquire() {
			defer cur.release()
			cur.h.ServeHTTP(w, r)
			return
		}
	}
}

// Swap installs h for the requests that arrive from now on and returns a
// channel closed when every request the replaced handler was serving has
// finished.
func (s *swapHandler) Swap(h http.Handler) (drained <-chan struct{}) {
	old := s.cur.Swap(newServedHandler(h))
	old.retire()
	return old.drained
}
