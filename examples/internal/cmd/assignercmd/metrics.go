package assignercmd

import (
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/announce"
)

const metricPrefix = "indexkit_assigner_"

// metrics are the assigner's Prometheus metrics, fed by the service's
// hooks. Series are not labelled by publisher; GET /assignments on the
// state API has the per-publisher view.
type metrics struct {
	reg        *prometheus.Registry
	announces  *prometheus.CounterVec
	decisions  *prometheus.CounterVec
	requests   *prometheus.CounterVec
	reqSeconds *prometheus.HistogramVec
	forwards   *prometheus.CounterVec
	polls      *prometheus.CounterVec
	pollSecs   prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg:       prometheus.NewRegistry(),
		announces: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "announces_total", Help: "Announces accepted, by source."}, []string{"source"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "decisions_total", Help: "Decisions of the state machine, by kind."}, []string{"kind"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "requests_total", Help: "Assign and handoff requests to indexers, by kind, indexer and outcome."},
			[]string{"kind", "indexer", "outcome"}),
		reqSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "request_duration_seconds", Help: "Assign and handoff request durations.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"kind"}),
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "forwards_total", Help: "Announces forwarded to indexers, by indexer and result."}, []string{"indexer", "result"}),
		polls:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "polls_total", Help: "Polls of indexers, by indexer and result (ok, error, discarded)."}, []string{"indexer", "result"}),
		pollSecs: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricPrefix + "poll_duration_seconds", Help: "Poll durations.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
	}
	m.reg.MustRegister(m.announces, m.decisions, m.requests, m.reqSeconds, m.forwards, m.polls, m.pollSecs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) hooks() assigner.Hooks {
	return assigner.Hooks{
		Announce: func(a announce.Announce) { m.announces.WithLabelValues(a.Source.String()).Inc() },
		Decision: func(d assigner.Decision) { m.decisions.WithLabelValues(string(d.Kind)).Inc() },
		Request: func(r assigner.RequestResult) {
			m.requests.WithLabelValues(string(r.Kind), r.Indexer, r.Outcome.String()).Inc()
			m.reqSeconds.WithLabelValues(string(r.Kind)).Observe(r.Duration.Seconds())
		},
		Forward: func(indexer string, _ peer.ID, err error) {
			res := "ok"
			if err != nil {
				res = "error"
			}
			m.forwards.WithLabelValues(indexer, res).Inc()
		},
		Poll: func(r assigner.PollResult) {
			res := "ok"
			switch {
			case r.Err != nil:
				res = "error"
			case r.Discarded:
				res = "discarded"
			}
			m.polls.WithLabelValues(r.Indexer, res).Inc()
			m.pollSecs.Observe(r.Duration.Seconds())
		},
	}
}

// receiverStats exports the announce receiver's counters at scrape time.
func (m *metrics) receiverStats(r *announce.Receiver) {
	gauge := func(name, help string, f func(announce.Stats) float64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricPrefix + name, Help: help},
			func() float64 { return f(r.Stats()) }))
	}
	gauge("announce_duplicates_total", "Announces dropped as repeats.", func(s announce.Stats) float64 { return float64(s.Duplicates) })
	gauge("announce_denied_total", "Announces rejected by the policy.", func(s announce.Stats) float64 { return float64(s.Denied) })
	gauge("announce_malformed_total", "Announce requests answered 400 or 413.", func(s announce.Stats) float64 { return float64(s.Malformed) })
	gauge("announce_republished_total", "HTTP announces republished on gossip.", func(s announce.Stats) float64 { return float64(s.Republished) })
	gauge("announce_rate_limited_total", "HTTP announces answered 429: their source was over -announce-rate (publishers the assigner does not know).", func(s announce.Stats) float64 { return float64(s.RateLimited) })
	gauge("announce_publisher_limited_total", "HTTP announces answered 429: their known publisher was over -announce-rate.", func(s announce.Stats) float64 { return float64(s.PublisherLimited) })
	gauge("announce_coalesced_total", "HTTP announces of a publisher being verified or with a request in flight, taken without counting against a limit.", func(s announce.Stats) float64 { return float64(s.Coalesced) })
	gauge("announce_refused_total", "Announces the assigner had no room for (HTTP: 503 with Retry-After): its intake or the queue of unknown publishers to verify was full.", func(s announce.Stats) float64 { return float64(s.Refused) })
}

// serviceStats exports the service's verification counters at scrape
// time.
func (m *metrics) serviceStats(svc *assigner.Service) {
	counter := func(name, help string, f func(assigner.ServiceStats) uint64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricPrefix + name, Help: help},
			func() float64 { return float64(f(svc.Stats())) }))
	}
	counter("verify_verified_total", "Announces of unknown publishers whose signed head verified.", func(s assigner.ServiceStats) uint64 { return s.Verified })
	counter("verify_unverified_total", "Announces of unknown publishers dropped: the head did not verify.", func(s assigner.ServiceStats) uint64 { return s.Unverified })
	counter("verify_skipped_total", "Announces dropped without a fetch: the publisher failed verification recently.", func(s assigner.ServiceStats) uint64 { return s.Skipped })
	counter("verify_busy_total", "Announces of unknown publishers dropped: the verification queue was full.", func(s assigner.ServiceStats) uint64 { return s.Busy })
	counter("verify_coalesced_total", "Announces of a publisher whose verification was running or waiting.", func(s assigner.ServiceStats) uint64 { return s.Coalesced })
	counter("announce_deferred_total", "Announces of a known publisher taken while a request for it was in flight; the newest goes on when it ends.", func(s assigner.ServiceStats) uint64 { return s.Deferred })
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricPrefix + "verify_waiting", Help: "Unknown publishers waiting for a head fetch to start."},
		func() float64 { return float64(svc.Stats().Waiting) }))
}
