package assigner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/assigner/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// Defaults of [ServiceConfig] and of the service options, in one place.
const (
	// DefaultPollInterval is the reference's Assignment.PollInterval.
	DefaultPollInterval = 5 * time.Minute
	// DefaultRequestTimeout bounds each request to an indexer (admin
	// call, forwarded announce).
	DefaultRequestTimeout = 30 * time.Second
	// DefaultTopic is the reference's Assignment.PubSubTopic.
	DefaultTopic = announce.TopicPrefix + announce.DefaultNetwork
)

// ServiceConfig is the pool and the rules of a [Service]: the reference
// assigner's Assignment section.
type ServiceConfig struct {
	// Indexers is the pool, in the order that breaks ties.
	Indexers []ServiceIndexer
	// Replication and PresetReplication are those of [Config] (0: 1).
	Replication       int
	PresetReplication int
	// PollInterval is the period of the status polls (0: 5m).
	PollInterval time.Duration
	// Policy is evaluated on the publisher's peer ID: a publisher it
	// rejects is answered 403 and never assigned. Nil allows every
	// publisher; [ExceptPolicy] builds the reference's {Allow, Except}.
	Policy func(peer.ID) bool
	// Topic is the gossip topic of announces, /indexer/ingest/<network>
	// ("": /indexer/ingest/mainnet). Used only with [WithGossip].
	Topic string
}

// ServiceIndexer is one indexer of the pool. URLs without a scheme get
// "http://", as in the reference; every URL is unique across the pool.
type ServiceIndexer struct {
	// ID names the indexer in decisions, logs and the state API; ""
	// means AdminURL.
	ID string
	// AdminURL is the base URL of the indexer's admin API (required).
	AdminURL string
	// FindURL is the base URL of its find API: the FrozenURL of handoffs
	// from it when it is frozen.
	FindURL string
	// IngestURL is the base URL of its ingest API, where announces are
	// forwarded (PUT /announce); "" forwards nothing.
	IngestURL string
	// PresetPublishers are the publishers preset to it.
	PresetPublishers []peer.ID
}

// Hooks are called by a [Service] for metrics. Each may be nil; they are
// called from the service's goroutines, concurrently, and must be fast.
type Hooks struct {
	// Announce: an announce was accepted (after policy and
	// de-duplication; before an unknown publisher's head is verified,
	// which [Service.Stats] counts).
	Announce func(a announce.Announce)
	// Decision: the state made a decision (assign, handoff, retry-later).
	Decision func(d Decision)
	// Request: an assign or handoff request ended.
	Request func(r RequestResult)
	// Forward: an announce was forwarded to an indexer's ingest API.
	Forward func(indexer string, publisher peer.ID, err error)
	// Poll: a poll of an indexer ended.
	Poll func(r PollResult)
}

// RequestResult is the end of an assign or handoff request.
type RequestResult struct {
	Kind      Kind // KindAssign or KindHandoff
	Indexer   string
	Publisher peer.ID
	From      string // handoff: the frozen indexer
	Outcome   Outcome
	Err       error
	Duration  time.Duration
}

// PollResult is the end of a poll of one indexer (GET /ingest/assigned,
// /status, /ingest/preferred).
type PollResult struct {
	Indexer  string
	Err      error // the indexer is then reported offline
	Frozen   bool
	Assigned int
	// Discarded: an assign or handoff request to the indexer overlapped
	// the poll, so its lists may predate the request's effect; the poll
	// is repeated once no request is in flight.
	Discarded bool
	Duration  time.Duration
}

type serviceOptions struct {
	log     *slog.Logger
	timeout time.Duration
	hooks   Hooks
	host    host.Host
	hc      *http.Client
	adminOp []admin.ClientOption
	resend  bool
	recvOp  []announce.Option
	// gossipOp are WithGossipOptions'.
	gossipOp []announce.GossipOption

	policy      *netpolicy.Policy
	vConc       int
	vTimeout    time.Duration
	vRetryAfter time.Duration
}

// ServiceOption configures [NewService]. A value out of range (nil, a
// duration ≤ 0) leaves the default.
type ServiceOption func(*serviceOptions)

// WithLogger sets the logger (attributes publisher, indexer, cid).
// Default: discard.
func WithLogger(l *slog.Logger) ServiceOption {
	return func(o *serviceOptions) {
		if l != nil {
			o.log = l
		}
	}
}

// WithRequestTimeout bounds every request to an indexer: each admin call
// of a poll, an assign, a handoff, a forwarded announce. Default
// [DefaultRequestTimeout].
func WithRequestTimeout(d time.Duration) ServiceOption {
	return func(o *serviceOptions) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithHooks sets the metrics hooks.
func WithHooks(h Hooks) ServiceOption { return func(o *serviceOptions) { o.hooks = h } }

// WithGossip receives announces on the gossip topic on h, and republishes
// HTTP announces there with OrigPeer = publisher. The caller owns h and
// closes it after Run returns. Default: no gossip.
func WithGossip(h host.Host) ServiceOption {
	return func(o *serviceOptions) {
		if h != nil {
			o.host = h
		}
	}
}

// WithHTTPClient sets the HTTP client of the admin calls and the
// forwarded announces. Default: a client of its own without timeout
// (each request is bounded by [WithRequestTimeout]).
func WithHTTPClient(hc *http.Client) ServiceOption {
	return func(o *serviceOptions) {
		if hc != nil {
			o.hc = hc
		}
	}
}

// WithDialPolicy sets where the service may connect to fetch an unknown
// publisher's signed head: the addresses announces name (default nil,
// netpolicy's default policy: public addresses only, checked after name
// resolution). A pool whose publishers are on a private network or on
// this machine needs netpolicy.New(netpolicy.AllowPrivate()). Admin calls
// and forwarded announces go to the configured indexers and are not
// restricted ([WithHTTPClient]).
func WithDialPolicy(p *netpolicy.Policy) ServiceOption {
	return func(o *serviceOptions) { o.policy = p }
}

// WithVerifyConcurrency sets how many unknown publishers' heads are
// fetched at once (default [DefaultVerifyConcurrency]); an announce that
// finds them all busy is dropped, and the publisher's next announce tries
// again.
func WithVerifyConcurrency(n int) ServiceOption {
	return func(o *serviceOptions) {
		if n > 0 {
			o.vConc = n
		}
	}
}

// WithVerifyTimeout bounds each head fetch of an unknown publisher
// (default [DefaultVerifyTimeout]).
func WithVerifyTimeout(d time.Duration) ServiceOption {
	return func(o *serviceOptions) {
		if d > 0 {
			o.vTimeout = d
		}
	}
}

// WithVerifyRetryAfter sets how long the announces of a publisher whose
// head did not verify are dropped without fetching it again (default
// [DefaultVerifyRetryAfter]).
func WithVerifyRetryAfter(d time.Duration) ServiceOption {
	return func(o *serviceOptions) {
		if d > 0 {
			o.vRetryAfter = d
		}
	}
}

// WithAdminOptions passes options to every admin.Client (a bearer token,
// a response limit).
func WithAdminOptions(opts ...admin.ClientOption) ServiceOption {
	return func(o *serviceOptions) { o.adminOp = append(o.adminOp, opts...) }
}

// WithReceiverOptions passes options to the announce receiver (IP
// filter, queue and de-duplication sizes). The policy is the config's.
func WithReceiverOptions(opts ...announce.Option) ServiceOption {
	return func(o *serviceOptions) { o.recvOp = append(o.recvOp, opts...) }
}

// WithGossipOptions passes options to the announce gossip of WithGossip
// (a per-peer rate). The network is the config's topic's.
func WithGossipOptions(opts ...announce.GossipOption) ServiceOption {
	return func(o *serviceOptions) { o.gossipOp = append(o.gossipOp, opts...) }
}

// WithResend forwards every HTTP announce of an assigned publisher to
// the unfrozen indexers holding it (the reference's later ResendHttp), so
// that indexers not on gossip hear of new heads. Default true.
func WithResend(on bool) ServiceOption { return func(o *serviceOptions) { o.resend = on } }

// Service drives a [State]: it rebuilds it at startup by polling every
// indexer, takes announces over HTTP (and gossip), polls the indexers
// periodically, and carries the decisions out over their admin APIs. See
// the package documentation, section Service.
type Service struct {
	cfg    ServiceConfig
	opts   serviceOptions
	recv   *announce.Receiver
	gossip *announce.Gossip

	// Owned by the loop goroutine.
	state  *State
	ixs    map[string]*svcIndexer
	order  []*svcIndexer
	latest map[peer.ID]announce.Message
	verify verifier // its maps too

	events  chan func(context.Context)
	pollNow chan struct{}
	ran     atomic.Bool
	running atomic.Bool
	stopped chan struct{}
	wg      sync.WaitGroup // request and poll goroutines
}

// svcIndexer is one indexer: its config, client, and the loop's record
// of the requests to it.
type svcIndexer struct {
	ServiceIndexer
	client *admin.Client

	gen      uint64 // assign and handoff requests started so far
	inflight int    // of those, awaiting their result
	polling  bool
	repoll   bool // poll again once no request is in flight
}

// NewService validates cfg and returns a service; it starts nothing.
func NewService(cfg ServiceConfig, opts ...ServiceOption) (*Service, error) {
	o := serviceOptions{log: slog.New(slog.DiscardHandler), timeout: DefaultRequestTimeout, resend: true,
		vConc: DefaultVerifyConcurrency, vTimeout: DefaultVerifyTimeout, vRetryAfter: DefaultVerifyRetryAfter}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.hc == nil {
		o.hc = &http.Client{}
	}
	if cfg.PollInterval < 0 {
		return nil, fmt.Errorf("%w: PollInterval %s is negative", ErrInvalidConfig, cfg.PollInterval)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	network, ok := strings.CutPrefix(cfg.Topic, announce.TopicPrefix)
	if !ok || network == "" {
		return nil, fmt.Errorf("%w: Topic %q: want %s<network>", ErrInvalidConfig, cfg.Topic, announce.TopicPrefix)
	}
	s := &Service{
		opts:    o,
		ixs:     make(map[string]*svcIndexer, len(cfg.Indexers)),
		latest:  make(map[peer.ID]announce.Message),
		events:  make(chan func(context.Context), 64),
		pollNow: make(chan struct{}, 1),
		stopped: make(chan struct{}),
		verify: verifier{
			hc: o.policy.Client(), concurrency: o.vConc, timeout: o.vTimeout, retryAfter: o.vRetryAfter,
			inflight: make(map[peer.ID]announce.Announce), failed: make(map[peer.ID]time.Time),
		},
	}
	urls := map[string]bool{}
	sc := Config{Replication: cfg.Replication, PresetReplication: cfg.PresetReplication, Allow: cfg.Policy}
	ixs := make([]ServiceIndexer, 0, len(cfg.Indexers))
	for i, ic := range cfg.Indexers {
		if ic.AdminURL == "" {
			return nil, fmt.Errorf("%w: Indexers[%d]: no AdminURL", ErrInvalidConfig, i)
		}
		for _, u := range []*string{&ic.AdminURL, &ic.FindURL, &ic.IngestURL} {
			if *u == "" {
				continue
			}
			if !strings.Contains(*u, "://") {
				*u = "http://" + *u
			}
			*u = strings.TrimSuffix(*u, "/")
			if urls[*u] {
				return nil, fmt.Errorf("%w: Indexers[%d]: URL %s used twice in the pool", ErrInvalidConfig, i, *u)
			}
			urls[*u] = true
		}
		if ic.ID == "" {
			ic.ID = ic.AdminURL
		}
		ic.PresetPublishers = append([]peer.ID(nil), ic.PresetPublishers...)
		c, err := admin.NewClient(ic.AdminURL, append([]admin.ClientOption{admin.WithHTTPClient(o.hc)}, o.adminOp...)...)
		if err != nil {
			return nil, fmt.Errorf("%w: Indexers[%d]: %w", ErrInvalidConfig, i, err)
		}
		ix := &svcIndexer{ServiceIndexer: ic, client: c}
		if s.ixs[ic.ID] == nil {
			s.ixs[ic.ID] = ix
			s.order = append(s.order, ix)
		} // a duplicate ID fails in NewState
		ixs = append(ixs, ic)
		sc.Indexers = append(sc.Indexers, IndexerConfig{ID: ic.ID, PresetPublishers: ic.PresetPublishers})
	}
	cfg.Indexers = ixs
	st, err := NewState(sc)
	if err != nil {
		return nil, err
	}
	s.state, s.cfg = st, cfg
	ropts := []announce.Option{announce.WithLogger(o.log)}
	if cfg.Policy != nil {
		ropts = append(ropts, announce.WithAllow(cfg.Policy))
	}
	if s.recv, err = announce.NewReceiver(append(ropts, o.recvOp...)...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if o.host != nil {
		gopts := append([]announce.GossipOption{announce.WithNetwork(network), announce.WithGossipLogger(o.log)}, o.gossipOp...)
		if s.gossip, err = announce.NewGossip(o.host, s.recv, gopts...); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return s, nil
}

// Config returns the configuration with defaults applied and URLs
// normalised.
func (s *Service) Config() ServiceConfig { return s.cfg }

// Handler is the announce intake: PUT /announce and PUT /ingest/announce
// (CBOR, or JSON with Content-Type application/json), answered 204, 400,
// 403 (policy) as the reference. Mount it at the root of the announce
// listener. Announces are queued until Run takes them.
func (s *Service) Handler() http.Handler { return s.recv }

// Receiver returns the announce receiver, for its Stats.
func (s *Service) Receiver() *announce.Receiver { return s.recv }

// Gossip returns the gossip of [WithGossip], or nil.
func (s *Service) Gossip() *announce.Gossip { return s.gossip }

// PollNow asks for an immediate poll of every indexer. It does not wait;
// requests made while one is pending merge into it.
func (s *Service) PollNow() {
	select {
	case s.pollNow <- struct{}{}:
	default:
	}
}

// Run rebuilds the state by polling every indexer, then serves announces,
// polls every PollInterval and carries the decisions out, until ctx ends.
// It returns nil then, after every goroutine it started has exited, and
// closes the announce receiver (later announces are answered 503). Run
// runs once; a second call returns [ErrAlreadyRun].
func (s *Service) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	defer s.recv.Close()
	defer s.verify.hc.CloseIdleConnections()
	s.running.Store(true)
	defer s.running.Store(false)
	eg, ctx := errgroup.WithContext(ctx)
	if s.gossip != nil {
		eg.Go(func() error { return s.gossip.Run(ctx) })
	}
	eg.Go(func() error { return s.intake(ctx) })
	eg.Go(func() error { return s.loop(ctx) })
	return eg.Wait()
}

// Snapshot returns a copy of the state, taken on the service's loop;
// [ErrNotRunning] outside Run.
func (s *Service) Snapshot(ctx context.Context) (Snapshot, error) {
	if !s.running.Load() {
		return Snapshot{}, ErrNotRunning
	}
	reply := make(chan Snapshot, 1)
	select {
	case s.events <- func(context.Context) { reply <- s.state.Snapshot() }:
	case <-s.stopped:
		return Snapshot{}, ErrNotRunning
	case <-ctx.Done():
		return Snapshot{}, ctx.Err()
	}
	select {
	case snap := <-reply:
		return snap, nil
	case <-s.stopped:
		return Snapshot{}, ErrNotRunning
	case <-ctx.Done():
		return Snapshot{}, ctx.Err()
	}
}

// intake feeds accepted announces to the loop.
func (s *Service) intake(ctx context.Context) error {
	for {
		a, err := s.recv.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, announce.ErrClosed) {
				return nil
			}
			return fmt.Errorf("assigner: announce intake: %w", err)
		}
		if h := s.opts.hooks.Announce; h != nil {
			h(a)
		}
		s.opts.log.Debug("announce", "publisher", a.Publisher, "cid", a.Cid, "source", a.Source.String())
		s.send(ctx, func(ctx context.Context) { s.onAnnounce(ctx, a) })
	}
}

// send hands an event to the loop; it gives up when ctx ends.
func (s *Service) send(ctx context.Context, ev func(context.Context)) {
	select {
	case s.events <- ev:
	case <-ctx.Done():
	}
}

// loop owns the state: every event runs here, one at a time.
func (s *Service) loop(ctx context.Context) error {
	defer close(s.stopped)
	defer s.wg.Wait() // requests end with ctx; their results are dropped
	s.opts.log.Info("rebuilding state", "indexers", len(s.order))
	s.pollAll(ctx)
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-s.events:
			ev(ctx)
		case <-t.C:
			s.pollAll(ctx)
		case <-s.pollNow:
			s.pollAll(ctx)
		}
	}
}

// onAnnounce takes an announce in: that of a publisher the state knows
// goes on at once; another waits for its publisher's head to verify.
func (s *Service) onAnnounce(ctx context.Context, a announce.Announce) {
	if !s.state.Known(a.Publisher) {
		s.verifyAnnounce(ctx, a)
		return
	}
	s.acceptAnnounce(ctx, a)
}

// acceptAnnounce records a as its publisher's latest, forwards it to the
// publisher's holders and feeds it to the state.
func (s *Service) acceptAnnounce(ctx context.Context, a announce.Announce) {
	m := announce.Message{Cid: a.Cid, Addrs: a.Addrs, ExtraData: a.ExtraData}
	if len(m.Addrs) == 0 {
		m.Addrs = s.latest[a.Publisher].Addrs // a gossip announce may carry none
	}
	s.latest[a.Publisher] = m
	if s.opts.resend && a.Source == announce.SourceHTTP && len(m.Addrs) > 0 {
		for _, id := range s.state.Holders(a.Publisher) {
			s.goForward(ctx, s.ixs[id], a.Publisher, m)
		}
	}
	s.apply(ctx, s.state.Announce(a.Publisher))
}

// apply carries decisions out, each request in its own goroutine.
func (s *Service) apply(ctx context.Context, ds []Decision) {
	for _, d := range ds {
		if h := s.opts.hooks.Decision; h != nil {
			h(d)
		}
		switch d.Kind {
		case KindAssign, KindHandoff:
			s.opts.log.Info("decision", "kind", string(d.Kind), "publisher", d.Publisher, "indexer", d.Indexer, "from", d.From)
			s.dispatch(ctx, d)
		default:
			s.opts.log.Info("decision", "kind", string(d.Kind), "publisher", d.Publisher, "reason", string(d.Reason))
		}
	}
}

func (s *Service) dispatch(ctx context.Context, d Decision) {
	ix := s.ixs[d.Indexer]
	var frozenURL string
	if d.Kind == KindHandoff {
		if f := s.ixs[d.From]; f != nil {
			frozenURL = f.FindURL
		}
	}
	if ix == nil { // not in the pool: cannot happen, report it failed
		s.apply(ctx, s.result(d, Failed))
		return
	}
	ix.gen++
	ix.inflight++
	m, haveMsg := s.latest[d.Publisher]
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		var err error
		if d.Kind == KindAssign {
			err = ix.client.Assign(rctx, d.Publisher)
		} else {
			err = ix.client.Handoff(rctx, d.Publisher, admin.HandoffRequest{FrozenID: d.FrozenID, FrozenURL: frozenURL})
		}
		cancel()
		o := outcomeOf(err, d.Kind == KindHandoff)
		if ctx.Err() != nil {
			return // shutting down: the result would be dropped anyway
		}
		if h := s.opts.hooks.Request; h != nil {
			h(RequestResult{Kind: d.Kind, Indexer: d.Indexer, Publisher: d.Publisher, From: d.From, Outcome: o, Err: err, Duration: time.Since(start)})
		}
		lvl := slog.LevelInfo
		if err != nil {
			lvl = slog.LevelWarn
		}
		s.opts.log.Log(ctx, lvl, "request done", "kind", string(d.Kind), "publisher", d.Publisher, "indexer", d.Indexer,
			"outcome", o.String(), "err", err)
		s.send(ctx, func(ctx context.Context) {
			ix.inflight--
			s.apply(ctx, s.result(d, o))
			if ix.inflight == 0 && ix.repoll && !ix.polling {
				s.startPoll(ctx, ix)
			}
		})
		if o == Done && haveMsg && len(m.Addrs) > 0 {
			s.forward(ctx, ix, d.Publisher, m) // so it syncs at once
		}
	}()
}

// result reports the outcome of d to the state.
func (s *Service) result(d Decision, o Outcome) []Decision {
	if d.Kind == KindHandoff {
		return s.state.HandoffResult(d.From, d.Indexer, d.Publisher, o)
	}
	return s.state.AssignResult(d.Indexer, d.Publisher, o)
}

// outcomeOf maps an admin call's error to the state's outcome.
func outcomeOf(err error, handoff bool) Outcome {
	switch {
	case err == nil:
		return Done
	case errors.Is(err, admin.ErrAlreadyAssigned):
		return AlreadyHeld
	case errors.Is(err, admin.ErrFrozen), errors.Is(err, admin.ErrNotAllowed), errors.Is(err, admin.ErrNoAssigner),
		errors.Is(err, admin.ErrUnknownIndexer): // does not take handoffs from that frozen indexer
		return Refused
	case handoff && errors.Is(err, admin.ErrUnknownPublisher):
		return NoSource
	}
	return Failed
}

func (s *Service) goForward(ctx context.Context, ix *svcIndexer, p peer.ID, m announce.Message) {
	if ix == nil || ix.IngestURL == "" {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.forward(ctx, ix, p, m)
	}()
}

// forward PUTs the announce m of p to ix's ingest API (CBOR).
func (s *Service) forward(ctx context.Context, ix *svcIndexer, p peer.ID, m announce.Message) {
	if ix.IngestURL == "" {
		return
	}
	snd, err := announce.NewHTTPSender([]string{ix.IngestURL}, p, announce.WithHTTPClient(s.opts.hc))
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		err = snd.Send(rctx, m)
		cancel()
	}
	if err != nil {
		s.opts.log.Warn("forward announce", "publisher", p, "indexer", ix.ID, "cid", m.Cid, "err", err)
	} else {
		s.opts.log.Debug("forwarded announce", "publisher", p, "indexer", ix.ID, "cid", m.Cid)
	}
	if h := s.opts.hooks.Forward; h != nil {
		h(ix.ID, p, err)
	}
}

func (s *Service) pollAll(ctx context.Context) {
	for _, ix := range s.order {
		s.startPoll(ctx, ix)
	}
}

// startPoll polls ix unless a poll is under way; while requests to ix are
// in flight it only marks ix to be polled once they have ended.
func (s *Service) startPoll(ctx context.Context, ix *svcIndexer) {
	if ix.polling {
		return
	}
	if ix.inflight > 0 {
		ix.repoll = true
		return
	}
	ix.polling, ix.repoll = true, false
	gen := ix.gen
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		st, err := s.fetch(ctx, ix)
		if ctx.Err() != nil {
			return
		}
		d := time.Since(start)
		s.send(ctx, func(ctx context.Context) { s.onPolled(ctx, ix, gen, st, err, d) })
	}()
}

// fetch reads the indexer's lists and status, each request bounded.
func (s *Service) fetch(ctx context.Context, ix *svcIndexer) (IndexerStatus, error) {
	var st IndexerStatus
	call := func(f func(context.Context) error) error {
		rctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		defer cancel()
		return f(rctx)
	}
	var as []admin.Assignment
	if err := call(func(c context.Context) (err error) { as, err = ix.client.Assigned(c); return }); err != nil {
		return st, err
	}
	var status admin.Status
	if err := call(func(c context.Context) (err error) { status, err = ix.client.Status(c); return }); err != nil {
		return st, err
	}
	st.ID, st.Frozen = status.ID, status.Frozen
	for _, a := range as {
		st.Assigned = append(st.Assigned, Assignment{Publisher: a.Publisher, Continued: a.Continued})
	}
	if !st.Frozen {
		if err := call(func(c context.Context) (err error) { st.Preferred, err = ix.client.Preferred(c); return }); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (s *Service) onPolled(ctx context.Context, ix *svcIndexer, gen uint64, st IndexerStatus, err error, d time.Duration) {
	ix.polling = false
	res := PollResult{Indexer: ix.ID, Err: err, Frozen: st.Frozen, Assigned: len(st.Assigned), Duration: d}
	var ds []Decision
	switch {
	case err != nil:
		s.opts.log.Warn("indexer offline", "indexer", ix.ID, "err", err)
		ds, _ = s.state.Offline(ix.ID)
	case ix.gen != gen || ix.inflight > 0:
		// A request overlapped the poll: its lists may predate the
		// request's effect (the ordering contract of State.Polled).
		res.Discarded = true
		ix.repoll = true
		ds, _ = s.state.Online(ix.ID)
	default:
		ds, err = s.state.Polled(ix.ID, st)
		if err != nil {
			res.Err = err
			s.opts.log.Warn("indexer status", "indexer", ix.ID, "err", err)
			ds, _ = s.state.Offline(ix.ID)
		} else {
			s.opts.log.Debug("polled", "indexer", ix.ID, "frozen", st.Frozen, "assigned", len(st.Assigned))
		}
	}
	if h := s.opts.hooks.Poll; h != nil {
		h(res)
	}
	s.apply(ctx, ds)
	if ix.repoll && ix.inflight == 0 {
		s.startPoll(ctx, ix)
	}
}
