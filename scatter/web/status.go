package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/internal/cors"
)

// Defaults of [NewStatus]'s options.
const (
	// DefaultMaxAge is how long one round of backend requests serves
	// status requests before the next request starts another.
	DefaultMaxAge = time.Second
	// DefaultRoundTimeout bounds one round of backend requests.
	DefaultRoundTimeout = 2 * time.Second
)

// Indexer states in [Indexer.State], besides those an indexer's GET
// /health names ("active", "frozen").
const (
	// StateUnknown: the backend answered, but not GET /health with a
	// state (a find API without the route, such as an older indexer).
	StateUnknown = "unknown"
	// StateDown: the backend did not answer GET /health at all.
	StateDown = "down"
)

// maxBody bounds what is read of one backend answer.
const maxBody = 4 << 20

// Local is what the front end knows of itself; [Status] reads it at each
// request (it must be cheap and safe for concurrent use).
type Local struct {
	// Backends are the base URLs of the find APIs the front end scatters
	// to, in order.
	Backends []string
	// Breakers are the circuit breaker states of Backends, index for
	// index ("closed", "open", "half-open"); nil when unknown.
	Breakers []string
	// Lookups counts the find lookups the front end has served since it
	// started; Partial those of them that ended without an answer from
	// every backend asked.
	Lookups, Partial uint64
}

// Report is the body of GET /status.json.
type Report struct {
	// Time is when the report was made (the backends' part may be up to
	// the status's max age older).
	Time time.Time
	// Lookups and Partial are [Local]'s, read at the request.
	Lookups, Partial uint64
	// Entries is the sum of the indexers' entry counts (a multihash held
	// by two indexers counts twice); nil when no indexer told its count.
	Entries *uint64 `json:",omitempty"`
	// EntriesExact reports whether every count in Entries is exact; when
	// false the page shows Entries as "about".
	EntriesExact bool
	// Indexers are the backends, in the front end's order.
	Indexers []Indexer
	// Assigner is the assigner's state, when the status has one
	// ([WithAssigner]).
	Assigner *Assigner `json:",omitempty"`
}

// Indexer is one backend of the front end in a [Report].
type Indexer struct {
	// URL is the backend's find API base URL.
	URL string
	// ID is the indexer's peer ID, when its GET /health names it.
	ID string `json:",omitempty"`
	// State is what its GET /health says ("active", "frozen"),
	// [StateUnknown] or [StateDown].
	State string
	// Breaker is the front end's circuit breaker state for it, if known.
	Breaker string `json:",omitempty"`
	// Entries and Providers are from its GET /stats (EntriesCount, or
	// EntriesEstimate when it gives no count; Providers); nil when it
	// did not tell.
	Entries   *uint64 `json:",omitempty"`
	Providers *uint64 `json:",omitempty"`
	// EntriesExact reports whether Entries is an exact count: its GET
	// /stats said EntriesExact (an indexkit node whose store counts). An
	// estimate, or a count from a node that does not say, is shown as
	// "about".
	EntriesExact bool
	// Error says why State or the counts are missing.
	Error string `json:",omitempty"`
}

// Assigner is the assigner's state in a [Report], from its state API's GET
// /indexers and GET /assignments.
type Assigner struct {
	// URL is the state API's base URL.
	URL string
	// Error says why the rest is missing or incomplete.
	Error       string `json:",omitempty"`
	Replication int
	Indexers    []AssignerIndexer
	Publishers  []Publisher
	// Handoffs are the handoffs not yet complete.
	Handoffs []Handoff
}

// AssignerIndexer is one indexer as the assigner sees it.
type AssignerIndexer struct {
	ID     string // the assigner's name for it
	PeerID string `json:",omitempty"`
	Online bool
	Frozen bool
	// Publishers is how many publishers are assigned to it.
	Publishers int
}

// Publisher is one publisher the assigner knows.
type Publisher struct {
	Publisher string
	// Holders are the indexers that hold it.
	Holders []Holder
	// Pending are the indexers it is being proposed to.
	Pending []string `json:",omitempty"`
	// Waiting says why it lacks holders, if it does.
	Waiting string `json:",omitempty"`
}

// Holder is one indexer holding a [Publisher].
type Holder struct {
	Indexer string
	Frozen  bool `json:",omitempty"`
	// Continued is the frozen indexer (peer ID) it took the publisher
	// over from in a handoff.
	Continued string `json:",omitempty"`
}

// Handoff is a handoff in progress: Publisher moves from the frozen
// indexer From to To (empty while it waits for one).
type Handoff struct {
	Publisher string
	From      string
	To        string `json:",omitempty"`
	Waiting   string `json:",omitempty"`
}

// Status serves GET /status.json: a [Report] on the front end and its
// pool. It asks each backend its GET /health and GET /stats, and the
// assigner (if any) its GET /indexers and GET /assignments, at most once
// per max age ([WithMaxAge]) whatever the number of status requests: the
// requests that arrive while a round runs wait for it and share it. A
// backend without those routes is reported with state "unknown". It is
// safe for concurrent use.
type Status struct {
	local func() Local
	statusConfig
	now func() time.Time

	sem    chan struct{} // held while a round runs
	mu     sync.Mutex    // guards what follows
	last   *round
	rounds uint64
}

// round is the answer of one round of backend requests.
type round struct {
	at       time.Time
	backends []string
	indexers []Indexer
	assigner *Assigner
}

// StatusOption configures a [Status]; see [NewStatus].
type StatusOption func(*statusConfig) error

// statusConfig is what the options of [NewStatus] set.
type statusConfig struct {
	client   *http.Client
	assigner string
	maxAge   time.Duration
	timeout  time.Duration
}

// WithHTTPClient sets the client of the backend and assigner requests
// (default: one of its own).
func WithHTTPClient(c *http.Client) StatusOption {
	return func(s *statusConfig) error {
		if c == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrInvalidOption)
		}
		s.client = c
		return nil
	}
}

// WithAssigner adds the assigner's state API (its base URL, serving GET
// /indexers and GET /assignments) to the report: publishers, their
// holders and the handoffs in progress. An empty URL adds nothing.
func WithAssigner(stateURL string) StatusOption {
	return func(s *statusConfig) error {
		s.assigner = strings.TrimRight(stateURL, "/")
		return nil
	}
}

// WithMaxAge sets how long one round of backend requests is reused
// (default [DefaultMaxAge]).
func WithMaxAge(d time.Duration) StatusOption {
	return func(s *statusConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: max age %v must be positive", ErrInvalidOption, d)
		}
		s.maxAge = d
		return nil
	}
}

// WithRoundTimeout bounds one round of backend requests (default
// [DefaultRoundTimeout]); a backend that has not answered by then is
// reported down.
func WithRoundTimeout(d time.Duration) StatusOption {
	return func(s *statusConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: round timeout %v must be positive", ErrInvalidOption, d)
		}
		s.timeout = d
		return nil
	}
}

// NewStatus returns the status endpoint of a front end that local
// describes. It starts nothing and dials nothing before the first request.
// It fails with an error wrapping [ErrInvalidOption] when local is nil or
// an option is invalid.
func NewStatus(local func() Local, opts ...StatusOption) (*Status, error) {
	if local == nil {
		return nil, fmt.Errorf("web: status: %w: nil local", ErrInvalidOption)
	}
	s := &Status{local: local, statusConfig: statusConfig{maxAge: DefaultMaxAge, timeout: DefaultRoundTimeout}, now: time.Now, sem: make(chan struct{}, 1)}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&s.statusConfig); err != nil {
			return nil, fmt.Errorf("web: status: %w", err)
		}
	}
	if s.client == nil {
		s.client = &http.Client{}
	}
	return s, nil
}

// Rounds returns how many rounds of backend requests the status has made.
func (s *Status) Rounds() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds
}

// ServeHTTP answers GET (and HEAD) with the JSON [Report], OPTIONS with
// 204 (a CORS preflight), and other methods with 405. Every answer
// carries Access-Control-Allow-Origin: * and the report Cache-Control:
// no-store.
func (s *Status) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !cors.Serve(w, r) {
		return
	}
	rep, err := s.Report(r.Context())
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	b, err := json.Marshal(rep)
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

// Report makes a report: the front end's counters now, and the last round
// of backend requests if it is younger than the max age and was made for
// the same backends, else a new round. It fails only when ctx ends while
// it waits for a round another request started.
func (s *Status) Report(ctx context.Context) (Report, error) {
	local := s.local()
	rd, err := s.round(ctx, local.Backends)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Time: s.now().UTC(), Lookups: local.Lookups, Partial: local.Partial, Assigner: rd.assigner}
	rep.Indexers = make([]Indexer, len(rd.indexers))
	copy(rep.Indexers, rd.indexers)
	exact := true
	for i := range rep.Indexers {
		if i < len(local.Breakers) {
			rep.Indexers[i].Breaker = local.Breakers[i]
		}
		if e := rep.Indexers[i].Entries; e != nil {
			sum := *e
			if rep.Entries != nil {
				sum += *rep.Entries
			}
			rep.Entries = &sum
			exact = exact && rep.Indexers[i].EntriesExact
		}
	}
	rep.EntriesExact = rep.Entries != nil && exact
	return rep, nil
}

// round returns a round younger than the max age for backends, making one
// if there is none; one round runs at a time, and those who wait for it
// share it.
func (s *Status) round(ctx context.Context, backends []string) (*round, error) {
	fresh := func() *round {
		s.mu.Lock()
		defer s.mu.Unlock()
		if l := s.last; l != nil && s.now().Sub(l.at) < s.maxAge && equal(l.backends, backends) {
			return l
		}
		return nil
	}
	if rd := fresh(); rd != nil {
		return rd, nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	if rd := fresh(); rd != nil { // made while we waited
		return rd, nil
	}
	// The round is shared: the request that runs it going away must not
	// cut it short for the others.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	rd := s.ask(rctx, backends)
	s.mu.Lock()
	s.last = rd
	s.rounds++
	s.mu.Unlock()
	return rd, nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ask makes one round: every backend's /health and /stats and the
// assigner's state, all at once.
func (s *Status) ask(ctx context.Context, backends []string) *round {
	rd := &round{backends: backends, indexers: make([]Indexer, len(backends))}
	var wg sync.WaitGroup
	for i, u := range backends {
		wg.Go(func() { rd.indexers[i] = s.indexer(ctx, u) })
	}
	if s.assigner != "" {
		wg.Go(func() { rd.assigner = s.assignerState(ctx) })
	}
	wg.Wait()
	rd.at = s.now()
	return rd
}

// healthBody and statsBody are the parts of an indexer's GET /health and
// GET /stats a report uses.
type healthBody struct {
	State string
	ID    string
}

type statsBody struct {
	EntriesCount    *uint64
	EntriesEstimate *uint64
	EntriesExact    bool
	Providers       *uint64
}

// indexer asks one backend its health and stats.
func (s *Status) indexer(ctx context.Context, base string) Indexer {
	ix := Indexer{URL: base, State: StateUnknown}
	var (
		h          healthBody
		st         statsBody
		herr, serr error
		wg         sync.WaitGroup
	)
	wg.Go(func() { herr = s.getJSON(ctx, base+"/health", &h) })
	wg.Go(func() { serr = s.getJSON(ctx, base+"/stats", &st) })
	wg.Wait()
	var errs []string
	switch {
	case herr == nil && h.State != "":
		ix.State, ix.ID = h.State, h.ID
	case herr == nil:
		ix.ID = h.ID
		errs = append(errs, "GET /health names no state")
	case errors.Is(herr, errNoRoute):
		errs = append(errs, "no GET /health")
	default:
		ix.State = StateDown
		errs = append(errs, herr.Error())
	}
	switch {
	case serr == nil:
		ix.Entries, ix.Providers = st.EntriesCount, st.Providers
		ix.EntriesExact = st.EntriesCount != nil && st.EntriesExact
		if ix.Entries == nil {
			ix.Entries = st.EntriesEstimate
		}
	case errors.Is(serr, errNoRoute):
		errs = append(errs, "no GET /stats")
	case ix.State != StateDown: // else said already
		errs = append(errs, serr.Error())
	}
	ix.Error = strings.Join(errs, "; ")
	return ix
}

// assignerState asks the assigner's state API.
func (s *Status) assignerState(ctx context.Context) *Assigner {
	a := &Assigner{URL: s.assigner, Indexers: []AssignerIndexer{}, Publishers: []Publisher{}, Handoffs: []Handoff{}}
	var (
		ixs        []assignerIndexerJSON
		as         assignmentsJSON
		ierr, aerr error
		wg         sync.WaitGroup
	)
	wg.Go(func() { ierr = s.getJSON(ctx, s.assigner+"/indexers", &ixs) })
	wg.Go(func() { aerr = s.getJSON(ctx, s.assigner+"/assignments", &as) })
	wg.Wait()
	if err := errors.Join(ierr, aerr); err != nil {
		a.Error = err.Error()
	}
	for _, ix := range ixs {
		a.Indexers = append(a.Indexers, AssignerIndexer{ID: ix.ID, PeerID: ix.PeerID, Online: ix.Online, Frozen: ix.Frozen, Publishers: len(ix.Assigned)})
	}
	a.Replication = as.Replication
	for _, p := range as.Publishers {
		pub := Publisher{Publisher: p.Publisher, Pending: p.Pending, Waiting: p.Waiting, Holders: []Holder{}}
		for _, h := range p.Assignments {
			pub.Holders = append(pub.Holders, Holder(h))
		}
		a.Publishers = append(a.Publishers, pub)
	}
	for _, h := range as.Handoffs {
		a.Handoffs = append(a.Handoffs, Handoff(h))
	}
	return a
}

// The parts of the assigner's state API a report uses (assigner.Snapshot's
// JSON; this package does not import assigner).
type assignerIndexerJSON struct {
	ID             string
	PeerID         string
	Online, Frozen bool
	Assigned       []json.RawMessage
}

type assignmentsJSON struct {
	Replication int
	Publishers  []struct {
		Publisher   string
		Assignments []struct {
			Indexer   string
			Frozen    bool
			Continued string
		}
		Pending []string
		Waiting string
	}
	Handoffs []struct {
		Publisher string
		From      string
		To        string
		Waiting   string
	}
}

// errNoRoute is a 404 or 405: the server does not have the route.
var errNoRoute = errors.New("no such route")

// getJSON GETs url into v: a status other than 200 is an error, 404 and
// 405 one wrapping errNoRoute.
func (s *Status) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxBody)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		io.Copy(io.Discard, body)
		return fmt.Errorf("GET %s: %s: %w", url, resp.Status, errNoRoute)
	default:
		io.Copy(io.Discard, body)
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
