package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
)

// errYield ends a walk whose slot ran out: the walk is persisted where it
// is and the publisher goes back to the queue, behind the others.
var errYield = errors.New("ingest: walk slot used up")

// slot is the share of a worker one walk gets from [Ingester.Run]: at
// most a time and a number of advertisements (collected or applied),
// and, past a grace period, at least a transfer rate. A nil *slot is
// unbounded.
type slot struct {
	start    time.Time
	deadline time.Time
	maxAds   int
	ads      int
	minRate  float64       // bytes per second; 0: none
	grace    time.Duration // of fetching, before the rate is checked
	bytes    atomic.Int64  // fetched from the publisher in this slot
	fetching atomic.Int64  // nanoseconds spent waiting on the publisher
}

func newSlot(cfg *config) *slot {
	now := time.Now()
	return &slot{start: now, deadline: now.Add(cfg.slotTime), maxAds: cfg.slotAds, minRate: cfg.minRate, grace: cfg.minRateGrace}
}

// use counts one advertisement and reports whether the walk must stop:
// errYield when the slot is used up, an error wrapping [ErrTooSlow] when
// the publisher sends less than the minimum rate.
func (sl *slot) use() error {
	if sl == nil {
		return nil
	}
	sl.ads++
	now := time.Now()
	// The rate counts the time spent waiting on the publisher only, not
	// the time spent applying what it sent.
	if el := time.Duration(sl.fetching.Load()); sl.minRate > 0 && el >= sl.grace {
		if rate := float64(sl.bytes.Load()) / el.Seconds(); rate < sl.minRate {
			return fmt.Errorf("%w: %.0f bytes/s over %v, below the minimum of %.0f bytes/s", ErrTooSlow, rate, el.Round(time.Millisecond), sl.minRate)
		}
	}
	if sl.ads >= sl.maxAds || !now.Before(sl.deadline) {
		return errYield
	}
	return nil
}

// meteredSyncer counts the bytes a walk fetches into its slot.
type meteredSyncer struct {
	Syncer
	sl *slot
}

func (m meteredSyncer) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	start := time.Now()
	b, err := m.Syncer.Block(ctx, c)
	m.sl.fetching.Add(int64(time.Since(start)))
	m.sl.bytes.Add(int64(len(b)))
	return b, err
}
