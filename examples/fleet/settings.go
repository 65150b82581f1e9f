package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The settings every node of the fleet reads at each heartbeat from its
// settings table (Redis hash P+"fleet:settings", etcd keys
// P+"fleet/settings/…"); see fleet set.
const (
	// maxBidsField is the static short-circuit threshold (a count ≥ 0).
	maxBidsField = "max-bids"
	// rehydrateField turns the loading of snapshots on or off ("on",
	// "off"), as the node's -rehydrate flag does; snapshots are written
	// either way.
	rehydrateField = "rehydrate"
)

// nodeSettings are the settings a node applies: the table's entries, or
// the node's flags where an entry is absent.
type nodeSettings struct {
	MaxBids   int
	Rehydrate bool
}

// keepSettings reads the fleet's settings at every heartbeat and applies
// what changed: max-bids to the node's store (lease.MaxBidsSetter),
// rehydrate to its indexer. Without an entry, the node's flag applies.
func (n *node) keepSettings(ctx context.Context) error {
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

// readSettings returns the fleet's settings, with the node's flags for
// those not set.
func (n *node) readSettings(ctx context.Context) (nodeSettings, error) {
	out := nodeSettings{MaxBids: n.cfg.MaxBids, Rehydrate: n.cfg.Rehydrate}
	all, err := n.tab.settings.List(ctx)
	if err != nil {
		return out, err
	}
	if v, ok := all[maxBidsField]; ok {
		mb, err := strconv.Atoi(v)
		if err != nil || mb < 0 {
			return out, fmt.Errorf("%s: %s = %q: want a count ≥ 0", n.tab.settings, maxBidsField, v)
		}
		out.MaxBids = mb
	}
	if v, ok := all[rehydrateField]; ok {
		switch v {
		case "on":
			out.Rehydrate = true
		case "off":
			out.Rehydrate = false
		default:
			return out, fmt.Errorf("%s: %s = %q: want on or off", n.tab.settings, rehydrateField, v)
		}
	}
	return out, nil
}

// runSet is `fleet set`: it writes the fleet's settings, which every node
// applies at its next heartbeat.
func runSet(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleet set", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describe(fs, "set")
	sf := storeFlags{Store: storeRedis, Redis: "127.0.0.1:6379", Etcd: "127.0.0.1:2379"}
	sf.register(fs, "Redis address of the catalog (-store redis)", "comma-separated etcd endpoints of the catalog (-store etcd)")
	prefix := fs.String("prefix", "fleet:", "key prefix of the catalog in the store")
	maxBids := fs.Int("max-bids", -1, "static short-circuit threshold for every node (0: none); -1 leaves it alone")
	rehydrate := fs.String("rehydrate", "", `"on" or "off": whether nodes load snapshots of indexes (-snapshot-dir) instead of cloning; "" leaves it alone`)
	unset := fs.Bool("unset", false, "remove the settings: each node goes back to its flags")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("fleet set: unexpected arguments %q", fs.Args())
	case *prefix == "":
		return errors.New("-prefix is empty")
	case *maxBids < -1:
		return fmt.Errorf("-max-bids %d: want a count ≥ 0", *maxBids)
	case *rehydrate != "" && *rehydrate != "on" && *rehydrate != "off":
		return fmt.Errorf("-rehydrate %q: want on or off", *rehydrate)
	case *maxBids == -1 && *rehydrate == "" && !*unset:
		return errors.New("fleet set: nothing to set; give -max-bids N, -rehydrate on|off or -unset")
	}
	if err := sf.check(fs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := dial(ctx, sf, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	settings := b.tables(*prefix).settings
	if *unset {
		if err := settings.Clear(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s removed\n", settings)
		return nil
	}
	set := map[string]string{}
	if *maxBids >= 0 {
		set[maxBidsField] = strconv.Itoa(*maxBids)
	}
	if *rehydrate != "" {
		set[rehydrateField] = *rehydrate
	}
	if err := settings.Set(ctx, set); err != nil {
		return err
	}
	for k, v := range set {
		fmt.Fprintf(stderr, "%s: %s = %s; nodes apply it at their next heartbeat\n", settings, k, v)
	}
	return nil
}
