package indexercmd

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/pace"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
)

const metricPrefix = "indexkit_indexer_"

// metrics are the node's Prometheus metrics, fed by the hooks of ingest
// and freeze, a wrapper of the find handler, and the announce receiver's
// Stats read at scrape time. Series are not labelled by publisher, to keep
// their number bounded; GET /ingest/status on the admin API has the
// per-publisher figures.
type metrics struct {
	reg          *prometheus.Registry
	adsWalked    prometheus.Counter
	adsApplied   prometheus.Counter
	applySeconds prometheus.Histogram
	entries      prometheus.Counter
	walksDone    prometheus.Counter
	walksFailed  prometheus.Counter
	diskUsage    prometheus.Gauge
	frozen       prometheus.Gauge
	findRequests *prometheus.CounterVec
	findSeconds  prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg:        prometheus.NewRegistry(),
		adsWalked:  prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + "ads_walked_total", Help: "Advertisements collected by chain walks."}),
		adsApplied: prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + "ads_applied_total", Help: "Advertisements applied to the index."}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricPrefix + "ad_apply_duration_seconds", Help: "Time to apply one advertisement, entry fetches included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
		entries:     prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + "multihashes_indexed_total", Help: "Multihashes put into the index."}),
		walksDone:   prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + "walks_done_total", Help: "Chain walks finished."}),
		walksFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + "walks_failed_total", Help: "Chain walks failed."}),
		diskUsage:   prometheus.NewGauge(prometheus.GaugeOpts{Name: metricPrefix + "disk_usage_percent", Help: "Usage of the fullest monitored filesystem, -1 when unknown."}),
		frozen:      prometheus.NewGauge(prometheus.GaugeOpts{Name: metricPrefix + "frozen", Help: "1 when the node is frozen (or freezing, unfreezing), else 0."}),
		findRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "find_requests_total", Help: "Find API requests by status code.",
		}, []string{"code"}),
		findSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricPrefix + "find_request_duration_seconds", Help: "Find API request durations.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
	}
	m.diskUsage.Set(-1)
	m.reg.MustRegister(m.adsWalked, m.adsApplied, m.applySeconds, m.entries, m.walksDone, m.walksFailed,
		m.diskUsage, m.frozen, m.findRequests, m.findSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// hooks are the node's hooks that feed m.
func (m *metrics) hooks() indexernode.Hooks {
	return indexernode.Hooks{Ingest: m.ingestHooks(), DiskCheck: m.diskCheck, FreezeState: m.freezeState, Find: m.find}
}

func (m *metrics) ingestHooks() ingest.Hooks {
	return ingest.Hooks{
		AdWalked: func(peer.ID, cid.Cid) { m.adsWalked.Inc() },
		AdApplied: func(_, _ peer.ID, _ cid.Cid, d time.Duration) {
			m.adsApplied.Inc()
			m.applySeconds.Observe(d.Seconds())
		},
		EntriesIndexed: func(_, _ peer.ID, _ cid.Cid, n int) { m.entries.Add(float64(n)) },
		WalkDone:       func(peer.ID, cid.Cid, int, time.Duration) { m.walksDone.Inc() },
		SyncFailed:     func(peer.ID, error) { m.walksFailed.Inc() },
	}
}

func (m *metrics) diskCheck(usage float64, err error) {
	if err != nil {
		usage = -1
	}
	m.diskUsage.Set(usage)
}

func (m *metrics) freezeState(s freeze.State, _ time.Time) {
	v := 0.0
	if s != freeze.Unfrozen {
		v = 1
	}
	m.frozen.Set(v)
}

// announceStats exports the receiver's counters, read at scrape time.
func (m *metrics) announceStats(stats func() announce.Stats) {
	counter := func(name, help string, f func(announce.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricPrefix + name, Help: help},
			func() float64 { return float64(f(stats())) })
	}
	m.reg.MustRegister(
		counter("announces_accepted_total", "Announces accepted, from HTTP and gossip.", func(s announce.Stats) uint64 { return s.Accepted }),
		counter("announces_duplicate_total", "Announces dropped as repeats.", func(s announce.Stats) uint64 { return s.Duplicates }),
		counter("announces_denied_total", "Announces refused by the policy.", func(s announce.Stats) uint64 { return s.Denied }),
		counter("announces_malformed_total", "HTTP announces answered 400 or 413.", func(s announce.Stats) uint64 { return s.Malformed }),
		counter("announces_dropped_total", "Announces dropped because the queue was full.", func(s announce.Stats) uint64 { return s.Dropped }),
		counter("announces_rate_limited_total", "HTTP announces answered 429: their source was over -announce-rate (publishers that never verified).", func(s announce.Stats) uint64 { return s.RateLimited }),
		counter("announces_publisher_limited_total", "HTTP announces answered 429: their verified publisher was over -announce-rate.", func(s announce.Stats) uint64 { return s.PublisherLimited }),
		counter("announces_coalesced_total", "Announces of a publisher with a walk queued or running, taken without counting against a limit.", func(s announce.Stats) uint64 { return s.Coalesced }),
		counter("announces_refused_total", "Announces the ingester had no room for (HTTP: 429 or 503 with Retry-After): too many publishers that never verified.", func(s announce.Stats) uint64 { return s.Refused }),
	)
}

// unverifiedStats exports the ingester's counts of publishers that never
// verified, read at scrape time.
func (m *metrics) unverifiedStats(stats func() ingest.UnverifiedStats) {
	gauge := func(name, help string, f func(ingest.UnverifiedStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricPrefix + name, Help: help}, func() float64 { return f(stats()) })
	}
	counter := func(name, help string, f func(ingest.UnverifiedStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricPrefix + name, Help: help},
			func() float64 { return float64(f(stats())) })
	}
	m.reg.MustRegister(
		gauge("unverified_publishers", "Publishers announced whose signed head has not verified yet, held in memory.", func(s ingest.UnverifiedStats) float64 { return float64(s.Held) }),
		gauge("unverified_checks_running", "Head checks of publishers that never verified running now.", func(s ingest.UnverifiedStats) float64 { return float64(s.Checking) }),
		counter("unverified_refused_total", "New publishers refused: the table of those that never verified was full (their source at its share).", func(s ingest.UnverifiedStats) uint64 { return s.Refused }),
		counter("unverified_evicted_total", "Publishers that never verified forgotten to make room for another source's.", func(s ingest.UnverifiedStats) uint64 { return s.Evicted }),
		counter("unverified_failed_total", "Head checks of publishers that never verified that failed.", func(s ingest.UnverifiedStats) uint64 { return s.Failed }),
	)
}

// pebbleStats exports, read at scrape time, the compaction debt of a
// Pebble index (the bytes compactions would have to rewrite to bring the
// LSM back to its shape, which grows when writes outrun compactions) and
// the bytes written into it and rewritten by its flushes and compactions,
// whose ratio is its write amplification, and the compactions running.
// Other stores export nothing.
func (m *metrics) pebbleStats(st store.Store) {
	ps, ok := st.(*pebble.Store)
	if !ok {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricPrefix + "pebble_compaction_debt_bytes",
		Help: "Estimated bytes the index's Pebble compactions are behind by.",
	}, func() float64 { return float64(ps.Pebble().Metrics().Compact.EstimatedDebt) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: metricPrefix + "pebble_bytes_in_total",
			Help: "Bytes written into the index's Pebble: its write-ahead log and the tables it ingested (sorted runs).",
		}, func() float64 { in, _ := pebble.WriteBytes(ps.Pebble().Metrics()); return float64(in) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: metricPrefix + "pebble_bytes_compacted_total",
			Help: "Bytes the index's Pebble compactions and flushes wrote: over pebble_bytes_in_total, its write amplification.",
		}, func() float64 { _, c := pebble.WriteBytes(ps.Pebble().Metrics()); return float64(c) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: metricPrefix + "pebble_compactions_running",
			Help: "Compactions of the index's Pebble in progress.",
		}, func() float64 { return float64(ps.Pebble().Metrics().Compact.NumInProgress) }))
}

// paceStats exports, read at scrape time, what the node's pacer did to
// let lookups go first (ingest/pace).
func (m *metrics) paceStats(stats func() pace.Stats, queried func() bool) {
	counter := func(name, help string, f func(pace.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricPrefix + name, Help: help},
			func() float64 { return f(stats()) })
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricPrefix + "pace_queried",
			Help: "1 while lookups came within the pacer's quiet time: ingest is paced."},
			func() float64 {
				if queried() {
					return 1
				}
				return 0
			}),
		counter("pace_turn_waits_total", "Ingest turns that waited because lookups came.", func(s pace.Stats) float64 { return float64(s.Waits) }),
		counter("pace_turn_wait_seconds_total", "Time ingest turns waited because lookups came.", func(s pace.Stats) float64 { return s.Waited.Seconds() }),
		counter("pace_lowered_total", "Threads of walks and compactions lowered below the lookups (nice).", func(s pace.Stats) float64 { return float64(s.Background) }),
	)
}

// find wraps a lookup handler to count requests and time them. The
// counters of the usual status codes are looked up once, here, and the
// status recorders are recycled: a lookup costs the metrics no allocation
// and no label hashing.
func (m *metrics) find(h http.Handler) http.Handler {
	byCode := make(map[int]prometheus.Counter)
	for _, code := range []int{200, 204, 301, 308, 400, 404, 405, 406, 413, 500, 502, 503, 504} {
		byCode[code] = m.findRequests.WithLabelValues(strconv.Itoa(code))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := statusWriters.Get().(*statusWriter)
		sw.ResponseWriter, sw.code = w, http.StatusOK
		h.ServeHTTP(sw, r)
		code := sw.code
		sw.ResponseWriter = nil
		statusWriters.Put(sw)
		if c, ok := byCode[code]; ok {
			c.Inc()
		} else {
			m.findRequests.WithLabelValues(strconv.Itoa(code)).Inc()
		}
		m.findSeconds.Observe(time.Since(start).Seconds())
	})
}

// statusWriters recycles the statusWriters of metrics.find: a handler
// must not use its ResponseWriter after ServeHTTP returns.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// statusWriter records the status code; Flush and Unwrap keep NDJSON
// streaming working through it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
