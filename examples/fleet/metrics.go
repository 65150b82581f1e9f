package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/lease/agent"
)

// promMetrics are a node's histograms and load gauges, fed by the node's
// hooks (fleetnode.Hooks) and exported by GET /metrics after the
// counters. Each node has its own registry: nothing global.
type promMetrics struct {
	reg          *prometheus.Registry
	claimLatency prometheus.Histogram
	bidWindow    prometheus.Histogram
	indexTime    *prometheus.HistogramVec // by from: git, snapshot, failed
	indexBytes   prometheus.Histogram
	unclaimed    prometheus.Gauge
	saturated    prometheus.Gauge
	stalled      prometheus.Gauge
	tooLarge     prometheus.Gauge
	lastServed   prometheus.Gauge
	scale        *prometheus.CounterVec // by decision
}

const promPrefix = "indexkit_fleet_"

func newPromMetrics() *promMetrics {
	secs := prometheus.ExponentialBuckets(0.005, 2, 16) // 5 ms to about 2.7 min
	m := &promMetrics{
		reg: prometheus.NewRegistry(),
		claimLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: promPrefix + "claim_latency_seconds", Buckets: secs,
			Help: "How long each item this node won had waited unclaimed, since the node's scans first saw it so.",
		}),
		bidWindow: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: promPrefix + "bid_window_seconds", Buckets: secs,
			Help: "From each bid of this node's to the close of its auction, won or lost.",
		}),
		indexTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: promPrefix + "index_seconds", Buckets: secs,
			Help: "Time of each Index call, by where the index came from: git (clone and build), snapshot (loaded), failed.",
		}, []string{"from"}),
		indexBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: promPrefix + "index_bytes", Buckets: prometheus.ExponentialBuckets(1<<10, 4, 12), // 1 KiB to 4 GiB
			Help: "Memory size of each index built or loaded.",
		}),
		unclaimed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: promPrefix + "unclaimed_items", Help: "Catalog items without a live lease at the node's last scan.",
		}),
		saturated: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: promPrefix + "saturated_items",
			Help: "Unclaimed items that fit a node's budget but found no room: claims stalled for the saturation rounds.",
		}),
		stalled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: promPrefix + "stalled_scans", Help: "Scans in a row with items unclaimed and none claimed.",
		}),
		tooLarge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: promPrefix + "unclaimed_too_large_items", Help: "Unclaimed items above this node's whole budget.",
		}),
		lastServed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: promPrefix + "last_served_timestamp_seconds", Help: "Unix time of the last query this node answered from an index (0: none).",
		}),
		scale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: promPrefix + "autoscale_decisions_total", Help: "The autoscaler's decisions, by kind (grow, shrink).",
		}, []string{"decision"}),
	}
	m.reg.MustRegister(m.claimLatency, m.bidWindow, m.indexTime, m.indexBytes, m.unclaimed, m.saturated,
		m.stalled, m.tooLarge, m.lastServed, m.scale)
	return m
}

// scanned sets the load gauges from a scan's signals.
func (m *promMetrics) scanned(s agent.Signals) {
	m.unclaimed.Set(float64(s.Unclaimed))
	m.saturated.Set(float64(s.Saturated))
	m.stalled.Set(float64(s.StalledRounds))
	m.tooLarge.Set(float64(s.TooLarge))
	if !s.LastServed.IsZero() {
		m.lastServed.Set(float64(s.LastServed.UnixNano()) / 1e9)
	}
}

// hooks feed m from a node's events.
func (m *promMetrics) hooks() fleetnode.Hooks {
	return fleetnode.Hooks{
		Claimed:   func(_ string, waited time.Duration) { m.claimLatency.Observe(waited.Seconds()) },
		BidClosed: func(_ string, window time.Duration) { m.bidWindow.Observe(window.Seconds()) },
		IndexTook: func(_, from string, took time.Duration) { m.indexTime.WithLabelValues(from).Observe(took.Seconds()) },
		Indexed:   func(_ string, size int64) { m.indexBytes.Observe(float64(size)) },
		Scanned:   m.scanned,
		Scale:     func(d agent.Decision, _ agent.Signals) { m.scale.WithLabelValues(d.String()).Inc() },
	}
}

// handler is GET /metrics: the counters and gauges of status() in the
// Prometheus text format, then m's histograms and load gauges.
func (m *promMetrics) handler(status func() fleetnode.Status, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st := status()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		names := make([]string, 0, len(st.Counters))
		for k := range st.Counters {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(w, "# TYPE indexkit_fleet_%s_total counter\nindexkit_fleet_%s_total %d\n", k, k, st.Counters[k])
		}
		ready := 0
		for _, it := range st.Items {
			if it.Ready {
				ready++
			}
		}
		fmt.Fprintf(w, "# TYPE indexkit_fleet_items_held gauge\nindexkit_fleet_items_held %d\n", len(st.Items))
		fmt.Fprintf(w, "# TYPE indexkit_fleet_items_ready gauge\nindexkit_fleet_items_ready %d\n", ready)
		fmt.Fprintf(w, "# TYPE indexkit_fleet_items_starved gauge\nindexkit_fleet_items_starved %d\n", len(st.Starved))
		fmt.Fprintf(w, "# TYPE indexkit_fleet_memory_used_bytes gauge\nindexkit_fleet_memory_used_bytes %d\n", st.Used)
		fmt.Fprintf(w, "# TYPE indexkit_fleet_memory_budget_bytes gauge\nindexkit_fleet_memory_budget_bytes %d\n", st.Budget)
		mfs, err := m.reg.Gather()
		if err != nil {
			log.Warn("gather metrics", "err", err)
		}
		enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return
			}
		}
	})
}
