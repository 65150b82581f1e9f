package fleetnode

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// The settings every node of the fleet reads at each heartbeat from its
// settings table (Redis hash P+"fleet:settings", etcd keys
// P+"fleet/settings/…"), which the fleet program's set command writes.
const (
	// SettingMaxBids is the static short-circuit threshold (a count ≥ 0),
	// in place of Timing.MaxBids.
	SettingMaxBids = "max-bids"
	// SettingRehydrate turns the loading of handed-off indexes and
	// snapshots on or off ("on", "off"), in place of Config.Rehydrate;
	// snapshots are written either way.
	SettingRehydrate = "rehydrate"
)

// nodeSettings are the settings a node applies: the table's entries, or
// the node's flags where an entry is absent.
type nodeSettings struct {
	MaxBids   int
	Rehydrate bool
}

// keepSettings reads the fleet's settings at every heartbeat and applies
// what changed: max-bids to the node's store (lease.MaxBidsSetter),
// rehydrate to its indexer. Without an entry, the node's Config applies.
func (n *Node) keepSettings(ctx context.Context) error {
	applied := nodeSettings{MaxBids: n.cfg.MaxBids, Rehydrate: n.cfg.Rehydrate}
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		if want, err := n.readSettings(ctx); err != nil {
			if ctx.Err() == nil {
				n.log.Warn("read fleet settings", "err", err)
			}
		} else {
			if want.MaxBids != applied.MaxBids {
				if err := n.store.SetMaxBids(want.MaxBids); err != nil {
					n.log.Warn("apply max-bids", "max_bids", want.MaxBids, "err", err)
				} else {
					n.log.Info("max-bids set", "max_bids", want.MaxBids, "was", applied.MaxBids)
					applied.MaxBids = want.MaxBids
				}
			}
			if want.Rehydrate != applied.Rehydrate {
				n.idx.rehydrate.Store(want.Rehydrate)
				n.log.Info("rehydrate set", "rehydrate", want.Rehydrate)
				applied.Rehydrate = want.Rehydrate
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// readSettings returns the fleet's settings, with the node's Config for
// those not set.
func (n *Node) readSettings(ctx context.Context) (nodeSettings, error) {
	out := nodeSettings{MaxBids: n.cfg.MaxBids, Rehydrate: n.cfg.Rehydrate}
	all, err := n.tab.Settings.List(ctx)
	if err != nil {
		return out, err
	}
	if v, ok := all[SettingMaxBids]; ok {
		mb, err := strconv.Atoi(v)
		if err != nil || mb < 0 {
			return out, fmt.Errorf("%s: %s = %q: want a count ≥ 0", n.tab.Settings, SettingMaxBids, v)
		}
		out.MaxBids = mb
	}
	if v, ok := all[SettingRehydrate]; ok {
		switch v {
		case "on":
			out.Rehydrate = true
		case "off":
			out.Rehydrate = false
		default:
			return out, fmt.Errorf("%s: %s = %q: want on or off", n.tab.Settings, SettingRehydrate, v)
		}
	}
	return out, nil
}
