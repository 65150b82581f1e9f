package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/indexkit/indexkit/lease/agent"
)

// promMetrics are a node's histograms and load gauges, fed by the
// manager's hooks and exported by GET /metrics after the counters. Each
// node has its own registry: nothing global.
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
