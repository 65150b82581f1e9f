package announce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/indexkit/indexkit/internal/logsample"
	"github.com/indexkit/indexkit/internal/netlimit"
)

// logSampleEvery is how often a Receiver logs an event that a sender can
// cause at will (a refused or dropped announce): one line of each kind per
// interval, with the count of those held back; [Stats] counts them all.
const logSampleEvery = 10 * time.Second

// Defaults of a [Receiver].
const (
	DefaultBodyLimit  = 8 << 10 // bytes of an HTTP announce body
	DefaultQueueSize  = 1024    // announces waiting for Next
	DefaultDedupeSize = 64      // recent (publisher, CID) pairs remembered
	DefaultMaxSources = 10_000  // sources whose rate is remembered (WithSourceRate, WithPeerRate)
)

// Source says how an [Announce] arrived.
type Source uint8

const (
	// SourceHTTP is an announce PUT to the [Receiver].
	SourceHTTP Source = iota + 1
	// SourceGossip is an announce received on the gossip topic by [Gossip].
	SourceGossip
)

func (s Source) String() string {
	switch s {
	case SourceHTTP:
		return "http"
	case SourceGossip:
		return "gossip"
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Announce is an accepted announce as the consumer gets it from
// [Receiver.Next].
type Announce struct {
	// Cid is the announced advertisement.
	Cid cid.Cid
	// Publisher is the peer whose chain it heads: the /p2p/ ID of the
	// addresses of an HTTP announce, the OrigPeer of a republished gossip
	// announce, the gossip signer otherwise.
	Publisher peer.ID
	// Addrs are the publisher's addresses without their /p2p/ part, after
	// IP filtering (see [WithFilterIPs]). May be empty for gossip.
	Addrs []multiaddr.Multiaddr
	// ExtraData is the message's ExtraData.
	ExtraData []byte
	// Source is how the announce arrived.
	Source Source
	// Relay is, for a gossip announce, the peer that signed the gossip
	// message: Publisher itself, or the indexer that republished an HTTP
	// announce. Empty for HTTP.
	Relay peer.ID
	// From is, for an HTTP announce, the address it came from: the
	// connection's remote address, or the X-Forwarded-For address with
	// [WithTrustForwardedFor]. Invalid for gossip.
	From netip.Addr
	// Trusted is true for an HTTP announce from a source exempted with
	// [WithSourceRateExempt].
	Trusted bool
}

// Stats is a snapshot of a [Receiver]'s counters since it was made.
type Stats struct {
	Accepted         uint64 // queued for Next, from any source
	HTTP             uint64 // of Accepted, from HTTP
	Gossip           uint64 // of Accepted, from gossip
	Duplicates       uint64 // dropped as already seen
	Denied           uint64 // rejected by the WithAllow policy
	Malformed        uint64 // HTTP requests answered 400 or 413
	RateLimited      uint64 // HTTP requests answered 429: their source was over WithSourceRate
	PublisherLimited uint64 // HTTP requests answered 429: their publisher was over WithPublisherRate
	Coalesced        uint64 // announces of a publisher with a walk pending, taken without a limit (WithSink)
	Refused          uint64 // announces the Sink refused for now (HTTP: 429 or 503)
	Dropped          uint64 // accepted but dropped because the queue was full
	Republished      uint64 // HTTP announces republished on gossip
	RepublishFailed  uint64 // republishes that failed (gossip not running, publish error)
	Queued           int    // announces waiting for Next now
	Sources          int    // sources whose rate WithSourceRate remembers now
}

// Option configures a [Receiver].
type Option func(*receiverConfig) error

type receiverConfig struct {
	allow      func(peer.ID) bool
	bodyLimit  int64
	queueSize  int
	dedupeSize int
	filterIPs  bool
	logger     *slog.Logger

	sourceRate   float64 // announces a second per source; 0: no limit
	sourceBurst  int
	maxSources   int
	forwardedFor bool
	exempt       []netip.Prefix

	sink           Sink
	publisherRate  float64 // announces a second per verified publisher; 0: no limit
	publisherBurst int
}

// WithAllow sets the policy: announces from a publisher for which allow
// returns false are refused (HTTP 403) or, from gossip, ignored. allow must
// be safe for concurrent use. The default allows every publisher.
func WithAllow(allow func(publisher peer.ID) bool) Option {
	return func(c *receiverConfig) error {
		c.allow = allow
		return nil
	}
}

// WithBodyLimit sets the largest HTTP announce body accepted, in bytes;
// larger bodies get 413. Default [DefaultBodyLimit].
func WithBodyLimit(n int64) Option {
	return func(c *receiverConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: body limit %d", ErrInvalidOption, n)
		}
		c.bodyLimit = n
		return nil
	}
}

// WithQueueSize sets how many accepted announces wait for [Receiver.Next]
// before new ones are dropped. Default [DefaultQueueSize].
func WithQueueSize(n int) Option {
	return func(c *receiverConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: queue size %d", ErrInvalidOption, n)
		}
		c.queueSize = n
		return nil
	}
}

// WithDedupeSize sets how many recent (publisher, CID) pairs are remembered
// to drop repeated announces; 0 turns de-duplication off. Default
// [DefaultDedupeSize], go-libipni's figure.
func WithDedupeSize(n int) Option {
	return func(c *receiverConfig) error {
		if n < 0 {
			return fmt.Errorf("%w: dedupe size %d", ErrInvalidOption, n)
		}
		c.dedupeSize = n
		return nil
	}
}

// WithFilterIPs, when on, removes private, loopback, link-local and
// unspecified IP addresses from announces (go-multiaddr's IsPublicAddr), as
// storetheindex's FilterIPs does. An announce left with no address is still
// delivered. Off by default.
func WithFilterIPs(on bool) Option {
	return func(c *receiverConfig) error {
		c.filterIPs = on
		return nil
	}
}

// WithSourceRate limits the HTTP announces of each source to perSecond a
// second on average and burst at once; beyond, the handler answers 429 Too
// Many Requests with a Retry-After header, before reading the body, and
// the announce is not delivered. A source is the request's remote IP
// address (an IPv6 address counts as its /64), or the X-Forwarded-For
// address with [WithTrustForwardedFor]. The sources are remembered in a
// table of [WithMaxSources] entries at most, the least recently seen
// forgotten first, so that any number of sources costs bounded memory.
// perSecond 0 removes the limit (the default); otherwise burst must be 1
// or more.
func WithSourceRate(perSecond float64, burst int) Option {
	return func(c *receiverConfig) error {
		if perSecond < 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) || (perSecond > 0 && burst < 1) {
			return fmt.Errorf("%w: source rate %v a second, burst %d", ErrInvalidOption, perSecond, burst)
		}
		c.sourceRate, c.sourceBurst = perSecond, burst
		return nil
	}
}

// WithMaxSources sets how many sources [WithSourceRate] remembers. Default
// [DefaultMaxSources].
func WithMaxSources(n int) Option {
	return func(c *receiverConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: max sources %d", ErrInvalidOption, n)
		}
		c.maxSources = n
		return nil
	}
}

// WithSourceRateExempt exempts the sources in prefixes from
// [WithSourceRate]: trusted senders of many announces, such as an
// assigner that forwards every publisher's announces to its indexers, or
// the loopback addresses of local processes. An IPv4-mapped prefix
// (::ffff:10.0.0.0/104) stands for its IPv4 form, as sources are compared
// unmapped. Each call adds to the list.
func WithSourceRateExempt(prefixes ...netip.Prefix) Option {
	return func(c *receiverConfig) error {
		for _, p := range prefixes {
			if !p.IsValid() {
				return fmt.Errorf("%w: exempt prefix %v", ErrInvalidOption, p)
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			c.exempt = append(c.exempt, p.Masked())
		}
		return nil
	}
}

// WithTrustForwardedFor, when on, takes the source of an HTTP announce for
// [WithSourceRate] from the last address of its X-Forwarded-For header:
// the client as the reverse proxy in front of the Receiver saw it. Turn it
// on only behind such a proxy, which must set the header: anyone else can
// write any address there. Without the header the remote address counts.
// Off by default.
func WithTrustForwardedFor(on bool) Option {
	return func(c *receiverConfig) error {
		c.forwardedFor = on
		return nil
	}
}

// WithLogger sets the logger; the default discards. Attribute keys:
// publisher, cid, source.
func WithLogger(l *slog.Logger) Option {
	return func(c *receiverConfig) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// republisher puts an HTTP announce on gossip; [Gossip] is the one.
type republisher interface {
	republish(ctx context.Context, a Announce) error
}

// Receiver is the announce intake of an indexer: an http.Handler for PUT
// /announce and PUT /ingest/announce, and the sink of [Gossip]. It checks
// the policy, drops repeats, and queues accepted announces for
// [Receiver.Next]. See the package documentation.
type Receiver struct {
	cfg receiverConfig

	queue chan Announce
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex // guards seen, closed, repub
	seen   *seenLRU
	closed bool
	repub  republisher

	rate    *netlimit.Rate // nil without WithSourceRate
	pubRate *netlimit.Rate // nil without WithPublisherRate
	sampled *logsample.Sampler

	accepted, http, gossip, duplicates, denied, malformedN, dropped,
	republished, republishFailed, rateLimited, publisherLimited,
	coalesced, refused atomic.Uint64
}

// NewReceiver returns a Receiver. It starts nothing.
func NewReceiver(opts ...Option) (*Receiver, error) {
	cfg := receiverConfig{
		bodyLimit:  DefaultBodyLimit,
		queueSize:  DefaultQueueSize,
		dedupeSize: DefaultDedupeSize,
		maxSources: DefaultMaxSources,
		logger:     slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	r := &Receiver{
		cfg:     cfg,
		queue:   make(chan Announce, cfg.queueSize),
		done:    make(chan struct{}),
		seen:    newSeenLRU(cfg.dedupeSize),
		sampled: logsample.New(logSampleEvery),
	}
	if cfg.sourceRate > 0 {
		var err error
		if r.rate, err = netlimit.NewRate(cfg.sourceRate, cfg.sourceBurst, netlimit.WithMaxKeys(cfg.maxSources)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
	}
	if cfg.publisherRate > 0 {
		if cfg.sink == nil {
			return nil, fmt.Errorf("%w: a publisher rate needs a Sink (WithSink) to tell verified publishers", ErrInvalidOption)
		}
		var err error
		if r.pubRate, err = netlimit.NewRate(cfg.publisherRate, cfg.publisherBurst, netlimit.WithMaxKeys(cfg.maxSources)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
	}
	return r, nil
}

// Next returns the next accepted announce, waiting for one until ctx ends
// or the Receiver is closed ([ErrClosed]). Announces come out in the order
// they were accepted. Several goroutines may call Next; each announce goes
// to one of them.
func (r *Receiver) Next(ctx context.Context) (Announce, error) {
	select {
	case <-r.done:
		return Announce{}, ErrClosed
	default:
	}
	select {
	case a := <-r.queue:
		return a, nil
	case <-r.done:
		return Announce{}, ErrClosed
	case <-ctx.Done():
		return Announce{}, ctx.Err()
	}
}

// Forget removes (publisher, c) from the de-duplication memory, so that the
// next announce of c by publisher is accepted again, e.g. after the sync it
// triggered failed.
func (r *Receiver) Forget(publisher peer.ID, c cid.Cid) {
	r.mu.Lock()
	r.seen.remove(keyOf(publisher, c))
	r.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (r *Receiver) Stats() Stats {
	return Stats{
		Accepted:         r.accepted.Load(),
		HTTP:             r.http.Load(),
		Gossip:           r.gossip.Load(),
		Duplicates:       r.duplicates.Load(),
		Denied:           r.denied.Load(),
		Malformed:        r.malformedN.Load(),
		RateLimited:      r.rateLimited.Load(),
		PublisherLimited: r.publisherLimited.Load(),
		Coalesced:        r.coalesced.Load(),
		Refused:          r.refused.Load(),
		Dropped:          r.dropped.Load(),
		Republished:      r.republished.Load(),
		RepublishFailed:  r.republishFailed.Load(),
		Queued:           len(r.queue),
		Sources:          r.sources(),
	}
}

// Close stops the Receiver: Next returns [ErrClosed], the handler answers
// 503, gossip announces are ignored. Announces still queued are discarded.
// Close is idempotent and always returns nil.
func (r *Receiver) Close() error {
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.done)
	})
	return nil
}

func (r *Receiver) setRepublisher(p republisher) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.repub != nil && p != nil {
		return fmt.Errorf("%w: the receiver already republishes through another Gossip", ErrInvalidOption)
	}
	r.repub = p
	return nil
}

// errDuplicate is deliver's answer for an announce already seen.
var errDuplicate = errors.New("announce: duplicate")

// deliver runs an announce through policy, IP filter, de-duplication,
// republishing (HTTP only) and the queue. It returns nil when queued,
// errDuplicate, ErrDenied, ErrQueueFull or ErrClosed.
func (r *Receiver) deliver(ctx context.Context, a Announce) error {
	return r.deliverAs(ctx, a, true)
}

// deliverAs is deliver; republish false keeps an HTTP announce off gossip.
func (r *Receiver) deliverAs(ctx context.Context, a Announce, republish bool) error {
	if r.cfg.allow != nil && !r.cfg.allow(a.Publisher) {
		r.denied.Add(1)
		return ErrDenied
	}
	if r.cfg.filterIPs {
		a.Addrs = filterPublic(a.Addrs)
	}
	k := keyOf(a.Publisher, a.Cid)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if r.seen.add(k) {
		r.mu.Unlock()
		r.duplicates.Add(1)
		return errDuplicate
	}
	repub := r.repub
	r.mu.Unlock()

	log := r.cfg.logger.With("publisher", a.Publisher, "cid", a.Cid, "source", a.Source)
	if a.Source == SourceHTTP && repub != nil && republish {
		if err := repub.republish(ctx, a); err != nil {
			r.republishFailed.Add(1)
			log.Debug("cannot republish announce on gossip", "err", err)
		} else {
			r.republished.Add(1)
		}
	}

	// Counted before it is queued, so that whoever takes it from Next
	// sees it counted; taken back if the queue is full.
	bySource := &r.gossip
	if a.Source == SourceHTTP {
		bySource = &r.http
	}
	r.accepted.Add(1)
	bySource.Add(1)
	if r.cfg.sink != nil {
		if err := r.cfg.sink.Take(a); err != nil {
			r.accepted.Add(^uint64(0))
			bySource.Add(^uint64(0))
			r.mu.Lock()
			r.seen.remove(k)
			r.mu.Unlock()
			if errors.Is(err, ErrBusy) {
				r.refused.Add(1)
			}
			r.logSampled(slog.LevelInfo, "refused", "announce refused", "publisher", a.Publisher, "cid", a.Cid, "source", a.Source, "from", a.From, "err", err)
			return err
		}
		log.Debug("announce taken")
		return nil
	}
	select {
	case r.queue <- a:
	default:
		r.accepted.Add(^uint64(0))
		bySource.Add(^uint64(0))
		// Let a later announce of the same CID through: this one was lost.
		r.mu.Lock()
		r.seen.remove(k)
		r.mu.Unlock()
		r.dropped.Add(1)
		r.logSampled(slog.LevelWarn, "queue full", "announce queue full, dropping announce", "publisher", a.Publisher, "cid", a.Cid, "source", a.Source)
		return ErrQueueFull
	}
	log.Debug("announce accepted")
	return nil
}

func filterPublic(addrs []multiaddr.Multiaddr) []multiaddr.Multiaddr {
	out := addrs[:0:0]
	for _, a := range addrs {
		if manet.IsPublicAddr(a) {
			out = append(out, a)
		}
	}
	return out
}

// ServeHTTP implements http.Handler for PUT /announce and PUT
// /ingest/announce. See the package documentation for the statuses.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/announce" && req.URL.Path != "/ingest/announce" {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	src, from, exempt := r.source(req)
	// Without a Sink every announce counts against its source, before its
	// body is read; with one, the body says whose announce it is first.
	if r.cfg.sink == nil && r.rate != nil && !exempt && !r.allowSource(w, src) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.cfg.bodyLimit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			r.malformedN.Add(1)
			http.Error(w, fmt.Sprintf("announce body over %d bytes", r.cfg.bodyLimit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var m Message
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt == "application/json" {
		m, err = DecodeJSON(body)
	} else {
		m, err = DecodeCBOR(body)
	}
	if err != nil {
		r.badRequest(w, err.Error())
		return
	}
	if len(m.Addrs) == 0 {
		r.badRequest(w, "announce has no addresses: an HTTP announce must say where to fetch the chain")
		return
	}
	ai, err := m.PublisherAddrInfo()
	if err != nil {
		r.badRequest(w, err.Error())
		return
	}
	republish := true
	if r.cfg.sink != nil && !exempt {
		switch r.cfg.sink.Class(ai.ID) {
		case ClassPending:
			// Free, so not passed on: the announce that queued the walk
			// was, and the next one after it will be.
			r.coalesced.Add(1)
			republish = false
		case ClassVerified:
			if r.pubRate != nil {
				if ok, wait := r.pubRate.Allow(string(ai.ID)); !ok {
					r.publisherLimited.Add(1)
					w.Header().Set("Retry-After", retryAfter(wait))
					http.Error(w, fmt.Sprintf("too many announces of publisher %s, try again later", ai.ID), http.StatusTooManyRequests)
					return
				}
			}
		default:
			if r.rate != nil && !r.allowSource(w, src) {
				return
			}
		}
	}
	err = r.deliverAs(req.Context(), Announce{
		Cid:       m.Cid,
		Publisher: ai.ID,
		Addrs:     ai.Addrs,
		ExtraData: m.ExtraData,
		Source:    SourceHTTP,
		From:      from,
		Trusted:   exempt,
	}, republish)
	var refusal *Refusal
	switch {
	case err == nil, errors.Is(err, errDuplicate):
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, ErrDenied):
		http.Error(w, fmt.Sprintf("announce from publisher %s not allowed", ai.ID), http.StatusForbidden)
	case errors.As(err, &refusal):
		w.Header().Set("Retry-After", retryAfter(refusal.RetryAfter))
		http.Error(w, refusal.Error(), refusal.status())
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "1")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, ErrQueueFull):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "announce queue full, try again", http.StatusServiceUnavailable)
	case errors.Is(err, ErrClosed):
		w.Header().Set("Retry-After", "5")
		http.Error(w, "announce receiver closed", http.StatusServiceUnavailable)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (r *Receiver) sources() int {
	if r.rate == nil {
		return 0
	}
	return r.rate.Len()
}

// allowSource counts an announce against the rate of src and, when src
// is over it, answers 429 with a Retry-After and returns false.
func (r *Receiver) allowSource(w http.ResponseWriter, src string) bool {
	ok, wait := r.rate.Allow(src)
	if !ok {
		r.rateLimited.Add(1)
		w.Header().Set("Retry-After", retryAfter(wait))
		http.Error(w, "too many announces from "+src+", try again later", http.StatusTooManyRequests)
	}
	return ok
}

// source is the source of req: its remote IP address, or the last
// X-Forwarded-For address if trusted and present. src is the key of its
// rate (WithSourceRate): the address, an IPv6 /64, or the remote address
// as it is if it holds no IP. exempt reports that WithSourceRateExempt
// exempts the address.
func (r *Receiver) source(req *http.Request) (src string, from netip.Addr, exempt bool) {
	ip, ok := parseIP(req.RemoteAddr)
	if r.cfg.forwardedFor {
		if xff := req.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			last := xff[len(xff)-1]
			if fip, fok := parseIP(strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])); fok {
				ip, ok = fip, true
			}
		}
	}
	if !ok {
		return req.RemoteAddr, netip.Addr{}, false
	}
	for _, p := range r.cfg.exempt {
		if p.Contains(ip) {
			return ip.String(), ip, true
		}
	}
	return netlimit.Source(ip).String(), ip, false
}

// logSampled logs msg at level, at most once per logSampleEvery for each
// kind, with the count of the events held back since the last one.
func (r *Receiver) logSampled(level slog.Level, kind, msg string, args ...any) {
	ok, held := r.sampled.Allow(kind)
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "like_events_not_logged", held)
	}
	r.cfg.logger.Log(context.Background(), level, msg, args...)
}

// parseIP returns the IP address of "host:port" or of a bare address,
// unmapped and without zone.
func parseIP(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

// retryAfter is the Retry-After value of a wait: whole seconds, at least 1.
func retryAfter(wait time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}

func (r *Receiver) badRequest(w http.ResponseWriter, msg string) {
	r.malformedN.Add(1)
	http.Error(w, msg, http.StatusBadRequest)
}
