package agent_test

import (
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease/agent"
)

// The Scaler grows on saturation, shrinks an idle node when nothing
// waits and more than MinNodes are live, and keeps quiet for Cooldown
// after each decision.
func TestScalerDecides(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := &agent.Scaler{IdleAfter: time.Minute, MinNodes: 2, Cooldown: 30 * time.Second}
	at := func(d time.Duration, s agent.Signals) agent.Signals {
		s.At = t0.Add(d)
		return s
	}
	steps := []struct {
		s    agent.Signals
		want agent.Decision
	}{
		{at(0, agent.Signals{Unclaimed: 5, Held: 3}), agent.Steady},
		{at(time.Second, agent.Signals{Unclaimed: 5, Saturated: 5, Held: 3}), agent.Grow},
		{at(10*time.Second, agent.Signals{Unclaimed: 5, Saturated: 5, Held: 3}), agent.Steady}, // cooling down
		{at(40*time.Second, agent.Signals{Unclaimed: 5, Saturated: 5, Held: 3}), agent.Grow},
		// Idle for 2 minutes, 3 live: but an item waits.
		{at(80*time.Second, agent.Signals{Unclaimed: 1, LiveNodes: 3, IdleSince: t0.Add(-time.Minute)}), agent.Steady},
		// Only a starved item waits: more nodes of this size do not help.
		{at(81*time.Second, agent.Signals{Unclaimed: 1, TooLarge: 1, LiveNodes: 3, IdleSince: t0.Add(-time.Minute)}), agent.Shrink},
		{at(200*time.Second, agent.Signals{LiveNodes: 2, IdleSince: t0.Add(-time.Minute)}), agent.Steady},      // MinNodes
		{at(300*time.Second, agent.Signals{LiveNodes: 3, IdleSince: t0.Add(250 * time.Second)}), agent.Steady}, // idle 50 s
		{at(400*time.Second, agent.Signals{LiveNodes: 3, Held: 1, IdleSince: time.Time{}}), agent.Steady},
	}
	for i, st := range steps {
		if got := sc.Decide(st.s); got != st.want {
			t.Errorf("step %d (%+v): %v, want %v", i, st.s, got, st.want)
		}
	}
}

// Metrics keeps the last scan's gauges and counts the decisions.
func TestMetricsSignals(t *testing.T) {
	var met agent.Metrics
	h := met.Hooks()
	served := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h.Scanned(agent.Signals{Unclaimed: 7, Saturated: 3, LastServed: served})
	h.Scale(agent.Grow, agent.Signals{})
	h.Scale(agent.Grow, agent.Signals{})
	h.Scale(agent.Shrink, agent.Signals{})
	got := met.Snapshot()
	if got.Unclaimed != 7 || got.Saturated != 3 || !got.LastServed.Equal(served) || got.ScaleGrow != 2 || got.ScaleShrink != 1 {
		t.Errorf("snapshot %+v, want 7 unclaimed, 3 saturated, served at %v, 2 grows, 1 shrink", got, served)
	}
}
