package assigner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// Defaults of the head verification of unknown publishers.
const (
	// DefaultVerifyConcurrency is how many heads are fetched at once.
	DefaultVerifyConcurrency = 8
	// DefaultVerifyQueue is how many unknown publishers wait for a head
	// fetch beyond those fetched.
	DefaultVerifyQueue = 256
	// DefaultVerifyTimeout bounds each head fetch.
	DefaultVerifyTimeout = ipnisync.DefaultTimeout
	// DefaultVerifyRetryAfter is how long the announces of a publisher
	// whose head did not verify are dropped without a new fetch.
	DefaultVerifyRetryAfter = time.Minute
	// maxUnverified bounds the publishers remembered as unverified (the
	// negative cache); past it, the oldest expiry is forgotten first.
	maxUnverified = 4096
)

// The verification errors of an announce that names nowhere the service
// can fetch the head from.
var (
	errNoAddress    = errors.New("the announce names no address to fetch the publisher's head from")
	errNoLibp2pHost = errors.New("the announce names only libp2p addresses, and the service has no libp2p host to fetch the publisher's head with (WithVerifyHost)")
)

// ServiceStats counts the verifications of unknown publishers' announces
// (see the package documentation, section Service).
type ServiceStats struct {
	// Verified: announces whose publisher's head verified; the publisher
	// was fed to the state.
	Verified uint64
	// Unverified: announces dropped because the head could not be fetched
	// or was not signed by the publisher.
	Unverified uint64
	// Skipped: announces dropped without a fetch, their publisher having
	// failed verification less than the retry delay ago.
	Skipped uint64
	// Busy: announces dropped because the verification queue was full
	// when they reached the service's loop. The receiver refuses (503)
	// such announces while their request is open, so this counts only
	// the few that raced past it.
	Busy uint64
	// Coalesced: announces of a publisher whose verification was running
	// or waiting; the newest is fed to the state if it verifies.
	Coalesced uint64
	// Deferred: announces of a known publisher taken while an assign or
	// handoff request for it was in flight; the newest is fed to the
	// state (and forwarded) once the last one ends.
	Deferred uint64
	// Waiting: unknown publishers waiting now for a head fetch to start.
	Waiting int
}

// verifier is the service's head verification. Its maps are owned by the
// loop goroutine; the counters are read by Stats.
type verifier struct {
	hc          *http.Client // the dial policy's
	host        host.Host    // libp2p heads (WithVerifyHost); nil: HTTP only
	concurrency int
	queueSize   int
	timeout     time.Duration
	retryAfter  time.Duration

	pending map[peer.ID]announce.Announce // the newest announce of each publisher being verified or waiting
	queue   []peer.ID                     // those waiting, oldest first
	running int                           // head fetches running
	failed  map[peer.ID]time.Time         // publishers whose head did not verify, until when

	// reserved counts the places of the queue held: by announces of
	// unknown publishers on their way to the loop (taken by the sink,
	// which refuses one when the queue is full), and by the publishers
	// waiting. Read and written from any goroutine.
	reserved atomic.Int64
	waiting  atomic.Int64 // len(queue), for Stats

	verified, unverified, skipped, busy, coalesced atomic.Uint64
}

// reserve takes a place in the queue for an announce of an unknown
// publisher, or reports that the queue is full.
func (v *verifier) reserve() bool {
	if v.reserved.Add(1) > int64(v.queueSize) {
		v.reserved.Add(-1)
		return false
	}
	return true
}

// release gives a place back.
func (v *verifier) release() { v.reserved.Add(-1) }

// has reports whether p is being verified or waits for it.
func (v *verifier) has(p peer.ID) bool { _, ok := v.pending[p]; return ok }

// Stats returns the verification counters.
func (s *Service) Stats() ServiceStats {
	v := &s.verify
	return ServiceStats{
		Verified: v.verified.Load(), Unverified: v.unverified.Load(), Skipped: v.skipped.Load(),
		Busy: v.busy.Load(), Coalesced: v.coalesced.Load(), Deferred: s.deferred.Load(), Waiting: int(v.waiting.Load()),
	}
}

// verifyAnnounce starts the verification of a, an announce of a publisher
// the state does not know, or queues it while as many as allowed run,
// unless it is running or waiting already (a is then noted as the
// newest) or failed recently. reserved: a holds a place in the queue. It
// reports whether a place is held for a's publisher waiting in the queue
// (reserved or taken here), to be given back when its fetch starts. It
// runs on the loop.
func (s *Service) verifyAnnounce(ctx context.Context, a announce.Announce, reserved bool) (kept bool) {
	v, p := &s.verify, a.Publisher
	log := s.opts.log.With("publisher", p, "cid", a.Cid)
	if _, ok := v.pending[p]; ok {
		v.pending[p] = a
		v.coalesced.Add(1)
		return false
	}
	if until, ok := v.failed[p]; ok {
		if time.Now().Before(until) {
			v.skipped.Add(1)
			log.Debug("announce dropped: the publisher's head did not verify recently", "retry_at", until)
			return false
		}
		delete(v.failed, p)
	}
	if v.running >= v.concurrency {
		if !reserved && !v.reserve() {
			v.busy.Add(1)
			s.recv.Forget(p, a.Cid) // let the publisher announce it again
			log.Warn("announce dropped: too many publisher heads waiting to be verified", "waiting", len(v.queue))
			return false
		}
		v.pending[p] = a
		v.queue = append(v.queue, p)
		v.waiting.Store(int64(len(v.queue)))
		s.classes.set(p, announce.ClassPending)
		return true
	}
	v.pending[p] = a
	s.classes.set(p, announce.ClassPending)
	s.startVerify(ctx, a)
	return false
}

// startVerify starts the head fetch of a's publisher.
func (s *Service) startVerify(ctx context.Context, a announce.Announce) {
	p := a.Publisher
	s.verify.running++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		transport, err := s.fetchHead(ctx, a)
		if ctx.Err() != nil {
			return
		}
		d := time.Since(start)
		s.send(ctx, func(ctx context.Context) { s.onVerified(ctx, p, transport, err, d) })
	}()
}

// fetchHead fetches the signed head of a's publisher and checks that the
// publisher's key signed it: over plain HTTP from the HTTP addresses a
// names if it names any, as an indexer's syncer would, and otherwise over
// libp2p streams of the verify host to its libp2p addresses. It returns
// the transport it used ("http" or "libp2p").
func (s *Service) fetchHead(ctx context.Context, a announce.Announce) (string, error) {
	var httpAddrs, p2pAddrs []ma.Multiaddr
	for _, m := range a.Addrs {
		if isHTTPAddr(m) {
			httpAddrs = append(httpAddrs, m)
		} else {
			p2pAddrs = append(p2pAddrs, m)
		}
	}
	opts := []ipnisync.Option{ipnisync.WithTimeout(s.verify.timeout), ipnisync.WithLogger(s.opts.log)}
	h := s.verify.host
	var addrs []ma.Multiaddr
	transport := "http"
	switch {
	case len(httpAddrs) > 0:
		addrs, opts = httpAddrs, append(opts, ipnisync.WithHTTPClient(s.verify.hc))
	case len(p2pAddrs) > 0 && h != nil:
		addrs, opts, transport = p2pAddrs, append(opts, ipnisync.WithLibp2p(h)), "libp2p"
		// A connection opened for the check is closed after it: the
		// indexer that gets the publisher dials it itself, and a flood of
		// announces must not leave the host holding a connection each.
		if h.Network().Connectedness(a.Publisher) != network.Connected {
			defer h.Network().ClosePeer(a.Publisher)
		}
	case len(p2pAddrs) > 0:
		return transport, errNoLibp2pHost
	default:
		return transport, errNoAddress
	}
	c, err := ipnisync.New(peer.AddrInfo{ID: a.Publisher, Addrs: addrs}, opts...)
	if err != nil {
		return transport, err
	}
	defer c.Close()
	if _, err := c.Head(ctx); err != nil {
		return transport, fmt.Errorf("head of %s over %s: %w", a.Publisher, transport, err)
	}
	return transport, nil
}

// onVerified ends the verification of publisher p: its newest announce
// goes to the state if err is nil, and is dropped otherwise. The next
// publisher waiting is started.
func (s *Service) onVerified(ctx context.Context, p peer.ID, transport string, err error, d time.Duration) {
	v := &s.verify
	a := v.pending[p]
	delete(v.pending, p)
	v.running--
	for v.running < v.concurrency && len(v.queue) > 0 {
		next := v.queue[0]
		v.queue[0] = ""
		v.queue = v.queue[1:]
		v.waiting.Store(int64(len(v.queue)))
		v.release()
		s.startVerify(ctx, v.pending[next])
	}
	if err != nil {
		v.unverified.Add(1)
		v.remember(p, time.Now().Add(v.retryAfter))
		s.reclass(p)
		s.opts.log.Warn("announce dropped: the publisher's head did not verify", "publisher", p, "cid", a.Cid,
			"source", a.Source.String(), "transport", transport, "duration", d, "err", err)
		return
	}
	v.verified.Add(1)
	s.opts.log.Info("publisher verified by its signed head", "publisher", p, "cid", a.Cid, "transport", transport, "duration", d)
	s.acceptAnnounce(ctx, a)
}

// remember records p as unverified until the given time, within
// maxUnverified entries: expired ones go first, then the soonest to
// expire.
func (v *verifier) remember(p peer.ID, until time.Time) {
	if len(v.failed) >= maxUnverified {
		now := time.Now()
		var soonest peer.ID
		var soonestAt time.Time
		for q, at := range v.failed {
			if !at.After(now) {
				delete(v.failed, q)
			} else if soonest == "" || at.Before(soonestAt) {
				soonest, soonestAt = q, at
			}
		}
		if len(v.failed) >= maxUnverified {
			delete(v.failed, soonest)
		}
	}
	v.failed[p] = until
}

func isHTTPAddr(a ma.Multiaddr) bool {
	for _, c := range a {
		if code := c.Protocol().Code; code == ma.P_HTTP || code == ma.P_HTTPS {
			return true
		}
	}
	return false
}
