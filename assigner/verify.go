package assigner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// Defaults of the head verification of unknown publishers.
const (
	// DefaultVerifyConcurrency is how many heads are fetched at once.
	DefaultVerifyConcurrency = 8
	// DefaultVerifyTimeout bounds each head fetch.
	DefaultVerifyTimeout = ipnisync.DefaultTimeout
	// DefaultVerifyRetryAfter is how long the announces of a publisher
	// whose head did not verify are dropped without a new fetch.
	DefaultVerifyRetryAfter = time.Minute
	// maxUnverified bounds the publishers remembered as unverified (the
	// negative cache); past it, the oldest expiry is forgotten first.
	maxUnverified = 4096
)

// errNoHTTPAddress is the verification error of an announce that names no
// HTTP address: there is nowhere to fetch the head from.
var errNoHTTPAddress = errors.New("the announce names no HTTP address to fetch the publisher's head from")

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
	// Busy: announces dropped because as many verifications as allowed
	// were running.
	Busy uint64
	// Coalesced: announces of a publisher whose verification was running;
	// the newest is fed to the state if it verifies.
	Coalesced uint64
}

// verifier is the service's head verification. Its maps are owned by the
// loop goroutine; the counters are read by Stats.
type verifier struct {
	hc          *http.Client // the dial policy's
	concurrency int
	timeout     time.Duration
	retryAfter  time.Duration

	inflight map[peer.ID]announce.Announce // the newest announce of each publisher being verified
	failed   map[peer.ID]time.Time         // publishers whose head did not verify, until when

	verified, unverified, skipped, busy, coalesced atomic.Uint64
}

// Stats returns the verification counters.
func (s *Service) Stats() ServiceStats {
	v := &s.verify
	return ServiceStats{
		Verified: v.verified.Load(), Unverified: v.unverified.Load(), Skipped: v.skipped.Load(),
		Busy: v.busy.Load(), Coalesced: v.coalesced.Load(),
	}
}

// verifyAnnounce starts the verification of a, an announce of a publisher
// the state does not know, unless it is running already, failed recently
// or too many run. It runs on the loop.
func (s *Service) verifyAnnounce(ctx context.Context, a announce.Announce) {
	v, p := &s.verify, a.Publisher
	log := s.opts.log.With("publisher", p, "cid", a.Cid)
	if _, ok := v.inflight[p]; ok {
		v.inflight[p] = a
		v.coalesced.Add(1)
		return
	}
	if until, ok := v.failed[p]; ok {
		if time.Now().Before(until) {
			v.skipped.Add(1)
			log.Debug("announce dropped: the publisher's head did not verify recently", "retry_at", until)
			return
		}
		delete(v.failed, p)
	}
	if len(v.inflight) >= v.concurrency {
		v.busy.Add(1)
		s.recv.Forget(p, a.Cid) // let the publisher announce it again
		log.Warn("announce dropped: too many publisher heads being verified", "running", len(v.inflight))
		return
	}
	v.inflight[p] = a
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		err := s.fetchHead(ctx, a)
		if ctx.Err() != nil {
			return
		}
		d := time.Since(start)
		s.send(ctx, func(ctx context.Context) { s.onVerified(ctx, p, err, d) })
	}()
}

// fetchHead fetches the signed head of a's publisher from the HTTP
// addresses a names, and checks that the publisher's key signed it.
func (s *Service) fetchHead(ctx context.Context, a announce.Announce) error {
	var addrs []ma.Multiaddr
	for _, m := range a.Addrs {
		if isHTTPAddr(m) {
			addrs = append(addrs, m)
		}
	}
	if len(addrs) == 0 {
		return errNoHTTPAddress
	}
	c, err := ipnisync.New(peer.AddrInfo{ID: a.Publisher, Addrs: addrs},
		ipnisync.WithHTTPClient(s.verify.hc), ipnisync.WithTimeout(s.verify.timeout), ipnisync.WithLogger(s.opts.log))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Head(ctx); err != nil {
		return fmt.Errorf("head of %s: %w", a.Publisher, err)
	}
	return nil
}

// onVerified ends the verification of publisher p: its newest announce
// goes to the state if err is nil, and is dropped otherwise.
func (s *Service) onVerified(ctx context.Context, p peer.ID, err error, d time.Duration) {
	v := &s.verify
	a := v.inflight[p]
	delete(v.inflight, p)
	if err != nil {
		v.unverified.Add(1)
		v.remember(p, time.Now().Add(v.retryAfter))
		s.opts.log.Warn("announce dropped: the publisher's head did not verify", "publisher", p, "cid", a.Cid,
			"source", a.Source.String(), "duration", d, "err", err)
		return
	}
	v.verified.Add(1)
	s.opts.log.Info("publisher verified by its signed head", "publisher", p, "cid", a.Cid, "duration", d)
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
