package assigner

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
)

// Defaults of [ServiceConfig] and of the service options, in one place.
const (
	// DefaultPollInterval is the reference's Assignment.PollInterval.
	DefaultPollInterval = 5 * time.Minute
	// DefaultRequestTimeout bounds each request to an indexer (admin
	// call, forwarded announce).
	DefaultRequestTimeout = 30 * time.Second
	// DefaultAnnouncePollInterval is the least time between two polls of
	// an indexer that announces ask for ([WithAnnouncePollInterval]).
	DefaultAnnouncePollInterval = time.Second
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
	Policy func(peer.ID) bool `json:"-"`
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
	// Announce: an announce was accepted (after policy, limits and
	// de-duplication, and taken by the service; before an unknown
	// publisher's head is verified, which [Service.Stats] counts). It is
	// called from the receiver's handlers.
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

// Service drives a [State]: it rebuilds it at startup by polling every
// indexer, takes announces over HTTP (and gossip), polls the indexers
// periodically, and carries the decisions out over their admin APIs. See
// the package documentation, section Service.
type Service struct {
	cfg    ServiceConfig
	opts   serviceConfig
	recv   *announce.Receiver
	gossip *announce.Gossip

	// Owned by the loop goroutine.
	state    *State
	ixs      map[string]*svcIndexer
	order    []*svcIndexer
	latest   map[peer.ID]announce.Message
	requests map[peer.ID]int               // assign and handoff requests in flight, by publisher
	again    map[peer.ID]announce.Announce // the newest announce of a publisher taken while requests for it were in flight
	verify   verifier                      // its maps too

	// classes is the loop's view of each publisher's announce class, read
	// by the receiver (see sink).
	classes   classes
	announces chan intakeItem // taken by sink, waiting for the loop

	wantPoll *time.Timer // fires when a poll an announce asked for is due

	events   chan func(context.Context)
	pollNow  chan struct{}
	deferred atomic.Uint64 // announces noted while a request was in flight (ServiceStats.Deferred)
	ran      atomic.Bool
	running  atomic.Bool
	stopped  chan struct{}
	wg       sync.WaitGroup // request and poll goroutines
}

// svcIndexer is one indexer: its config, client, and the loop's record
// of the requests to it.
type svcIndexer struct {
	ServiceIndexer
	client *admin.Client

	gen      uint64 // assign and handoff requests started so far
	inflight int    // of those, awaiting their result
	polling  bool
	repoll   bool      // poll again once no request is in flight
	polled   time.Time // when its latest poll started
	wanted   bool      // an announce asked for a poll not started yet
	held     []peer.ID // the publishers its latest successful poll listed
}

// NewService validates cfg and returns a service; it starts nothing.
func NewService(cfg ServiceConfig, opts ...ServiceOption) (*Service, error) {
	o := serviceConfig{log: slog.New(slog.DiscardHandler), timeout: DefaultRequestTimeout, resend: true, announcePoll: DefaultAnnouncePollInterval,
		vConc: DefaultVerifyConcurrency, vQueue: DefaultVerifyQueue, vTimeout: DefaultVerifyTimeout, vRetryAfter: DefaultVerifyRetryAfter}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, err
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
		opts:      o,
		ixs:       make(map[string]*svcIndexer, len(cfg.Indexers)),
		latest:    make(map[peer.ID]announce.Message),
		requests:  make(map[peer.ID]int),
		again:     make(map[peer.ID]announce.Announce),
		classes:   classes{m: make(map[peer.ID]announce.Class)},
		announces: make(chan intakeItem, intakeSize),
		events:    make(chan func(context.Context), 64),
		pollNow:   make(chan struct{}, 1),
		stopped:   make(chan struct{}),
		verify: verifier{
			hc: o.policy.Client(), host: o.vHost, concurrency: o.vConc, queueSize: o.vQueue, timeout: o.vTimeout, retryAfter: o.vRetryAfter,
			pending: make(map[peer.ID]announce.Announce), failed: make(map[peer.ID]time.Time),
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
	for _, ic := range cfg.Indexers {
		for _, p := range ic.PresetPublishers {
			s.classes.set(p, announce.ClassVerified) // configured, so known
		}
	}
	ropts := []announce.Option{announce.WithLogger(o.log)}
	if cfg.Policy != nil {
		ropts = append(ropts, announce.WithAllow(cfg.Policy))
	}
	// Announces go straight to the loop (sink), which says what each
	// costs before any limit counts it; last, so that no option replaces it.
	ropts = append(append(ropts, o.recvOp...), announce.WithSink(sink{s}))
	if s.recv, err = announce.NewReceiver(ropts...); err != nil {
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
// 403 (policy) as the reference; 429 with a Retry-After beyond the
// limits of [WithReceiverOptions] (announce.WithSourceRate for the
// publishers the service does not know, announce.WithPublisherRate for
// those it knows; none for a publisher being verified or with a request
// in flight, whose announces are coalesced); 503 with a Retry-After when
// the service cannot take the announce now (see the package
// documentation, section Announces). Mount it at the root of the
// announce listener. Announces wait for Run, up to a thousand.
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
// runs once; a second call returns [ErrRunTwice].
func (s *Service) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	defer s.recv.Close()
	defer s.verify.hc.CloseIdleConnections()
	s.running.Store(true)
	defer s.running.Store(false)
	eg, ctx := errgroup.WithContext(ctx)
	if s.gossip != nil {
		eg.Go(func() error { return s.gossip.Run(ctx) })
	}
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
	s.wantPoll = time.NewTimer(s.opts.announcePoll)
	s.wantPoll.Stop()
	defer s.wantPoll.Stop()
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
		case in := <-s.announces:
			s.opts.log.Debug("announce", "publisher", in.a.Publisher, "cid", in.a.Cid, "source", in.a.Source.String())
			s.onAnnounce(ctx, in.a, in.reserved)
		case <-t.C:
			s.pollAll(ctx)
		case <-s.pollNow:
			s.pollAll(ctx)
		case <-s.wantPoll.C:
			s.startWanted(ctx)
		}
	}
}
