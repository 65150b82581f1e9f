package scattercmd

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/indexkit/indexkit/scatter"
)

const metricPrefix = "indexkit_scatter_"

// metrics are the Prometheus metrics of the front end. Backends are
// labelled by their URL, so that series carry over config reloads.
//
// What the Gather reports as it happens comes from its hooks (request
// durations, breaker state changes, metadata disagreements). What only its
// Stats snapshot knows (cache hits and misses, partial answers, requests
// skipped by an open breaker, and the failure counts by kind, which leave
// out requests the client abandoned) is read at scrape time by
// statsCollector, summed over every Gather the process has run so that
// counters never go back on a reload.
type metrics struct {
	reg           *prometheus.Registry
	duration      *prometheus.HistogramVec
	stateChanges  *prometheus.CounterVec
	disagreements *prometheus.CounterVec
	reloads       *prometheus.CounterVec
	stats         *statsCollector
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "backend_request_duration_seconds",
			Help:    "How long a backend took over its part of a request (answered, failed or abandoned).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12), // 1 ms to about 24 s
		}, []string{"backend"}),
		stateChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "breaker_state_changes_total",
			Help: "Circuit breaker state changes, by backend and new state.",
		}, []string{"backend", "to"}),
		disagreements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "metadata_disagreements_total",
			Help: "Results dropped because another backend had already answered the same provider and context with other metadata, by the backend dropped.",
		}, []string{"backend"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "config_reloads_total",
			Help: "Config reloads on SIGHUP, by result: applied, unchanged or failed.",
		}, []string{"result"}),
		stats: newStatsCollector(),
	}
	m.reg.MustRegister(m.duration, m.stateChanges, m.disagreements, m.reloads, m.stats,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// hooks returns the hooks of a Gather over the backends named by names.
func (m *metrics) hooks(names []string, log *slog.Logger) scatter.GatherHooks {
	durations := make([]prometheus.Observer, len(names))
	for i, n := range names {
		durations[i] = m.duration.WithLabelValues(n)
	}
	return scatter.GatherHooks{
		OnBackendDone: func(i int, d time.Duration, _ error) {
			durations[i].Observe(d.Seconds())
		},
		OnStateChange: func(i int, from, to scatter.BreakerState) {
			m.stateChanges.WithLabelValues(names[i], to.String()).Inc()
			log.Warn("circuit breaker", "indexer", names[i], "from", from.String(), "to", to.String())
		},
		OnDisagreement: func(_ multihash.Multihash, _ peer.ID, _ []byte, i int) {
			m.disagreements.WithLabelValues(names[i]).Inc()
		},
	}
}

// statsCollector exports the Stats of the Gathers a process runs: the
// current one, those replaced but still serving requests, and the totals of
// those that are done (folded in by retire).
type statsCollector struct {
	mu      sync.Mutex
	current *scatter.Gather
	live    []*scatter.Gather // current, and replaced ones still serving
	done    statTotals
	// high is the last value exported of each counter series. Stats reads
	// a Gather's counters one by one while requests update them, so two
	// counters combined (errors are failures less timeouts) can lag for one
	// scrape; exporting the highest value seen keeps every series monotonic.
	high map[string]uint64

	queries, partial, hits, misses, entries *prometheus.Desc
	requests, errors, state, backends       *prometheus.Desc
}

type statTotals struct {
	queries, partial, hits, misses uint64
	backends                       map[string]*backendTotals
}

type backendTotals struct {
	requests, failures, timedOut, skipped uint64
}

func (t *statTotals) add(s scatter.GatherStats) {
	t.queries += s.Queries
	t.partial += s.Partial
	t.hits += s.CacheHits
	t.misses += s.CacheMisses
	if t.backends == nil {
		t.backends = map[string]*backendTotals{}
	}
	for _, b := range s.Backends {
		bt := t.backends[b.Name]
		if bt == nil {
			bt = &backendTotals{}
			t.backends[b.Name] = bt
		}
		bt.requests += b.Requests
		bt.failures += b.Failures
		bt.timedOut += b.TimedOut
		bt.skipped += b.Skipped
	}
}

func (t *statTotals) clone() statTotals {
	c := *t
	c.backends = make(map[string]*backendTotals, len(t.backends))
	for n, b := range t.backends {
		bc := *b
		c.backends[n] = &bc
	}
	return c
}

func newStatsCollector() *statsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(metricPrefix+name, help, labels, nil)
	}
	return &statsCollector{
		queries:  d("queries_total", "Find queries."),
		partial:  d("partial_answers_total", "Find queries that ended without an answer from every backend asked (answered partially, 502 or 504)."),
		hits:     d("cache_hits_total", "Find queries answered from the result cache."),
		misses:   d("cache_misses_total", "Find queries not found in the result cache (0 without a cache)."),
		entries:  d("cache_entries", "Answers in the result cache."),
		requests: d("backend_requests_total", "Requests sent to a backend.", "backend"),
		errors:   d("backend_errors_total", "Backend requests that got no answer, by kind: timeout (no answer in time), error (any other failure), breaker_open (not sent: the breaker was open).", "backend", "kind"),
		state:    d("breaker_state", "Circuit breaker state of each current backend: 0 closed, 1 open, 2 half-open.", "backend"),
		backends: d("backends", "Backends of the current configuration."),
		high:     map[string]uint64{},
	}
}

// setCurrent makes g the current Gather.
func (c *statsCollector) setCurrent(g *scatter.Gather) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current = g
	c.live = append(c.live, g)
}

// retire folds the counters of g, which serves no request any more, into
// the totals.
func (c *statsCollector) retire(g *scatter.Gather) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.live, g); i >= 0 {
		c.live = slices.Delete(c.live, i, i+1)
		c.done.add(g.Stats())
	}
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queries, c.partial, c.hits, c.misses, c.entries, c.requests, c.errors, c.state, c.backends} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	t := c.done.clone()
	for _, g := range c.live {
		t.add(g.Stats())
	}
	var cur scatter.GatherStats
	if c.current != nil {
		cur = c.current.Stats()
	}
	defer c.mu.Unlock()

	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		key := d.String() + "\x00" + strings.Join(labels, "\x00")
		v = max(v, c.high[key])
		c.high[key] = v
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(c.queries, t.queries)
	counter(c.partial, t.partial)
	counter(c.hits, t.hits)
	counter(c.misses, t.misses)
	gauge(c.entries, float64(cur.CacheEntries))
	gauge(c.backends, float64(len(cur.Backends)))
	for n, b := range t.backends {
		counter(c.requests, b.requests, n)
		timedOut := min(b.timedOut, b.failures)
		counter(c.errors, timedOut, n, "timeout")
		counter(c.errors, b.failures-timedOut, n, "error")
		counter(c.errors, b.skipped, n, "breaker_open")
	}
	for _, b := range cur.Backends {
		gauge(c.state, float64(b.State), b.Name)
	}
}
