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

// maxBidsField is the setting every node of the fleet reads at each
// heartbeat from its settings table (Redis hash P+"fleet:settings", etcd
// key P+"fleet/settings/max-bids"): the static short-circuit threshold
// (see fleet set).
const maxBidsField = "max-bids"

// keepSettings reads the fleet's settings at every heartbeat and applies
// a changed max-bids to the node's store (lease.MaxBidsSetter); without
// the field, the node's -max-bids flag applies.
func (n *node) keepSettings(ctx context.Context) error {
	applied := n.cfg.MaxBids
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		if want, err := n.readMaxBids(ctx); err != nil {
			if ctx.Err() == nil {
				n.log.Warn("read fleet settings", "err", err)
			}
		} else if want != applied {
			if err := n.store.SetMaxBids(want); err != nil {
				n.log.Warn("apply max-bids", "max_bids", want, "err", err)
			} else {
				n.log.Info("max-bids set", "max_bids", want, "was", applied)
				applied = want
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// readMaxBids returns the fleet's max-bids setting, or the node's flag
// when none is set.
func (n *node) readMaxBids(ctx context.Context) (int, error) {
	v, err := n.tab.settings.Get(ctx, maxBidsField)
	if errors.Is(err, errNoEntry) {
		return n.cfg.MaxBids, nil
	}
	if err != nil {
		return 0, err
	}
	mb, err := strconv.Atoi(v)
	if err != nil || mb < 0 {
		return 0, fmt.Errorf("%s: %s = %q: want a count ≥ 0", n.tab.settings, maxBidsField, v)
	}
	return mb, nil
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
	case *maxBids == -1 && !*unset:
		return errors.New("fleet set: nothing to set; give -max-bids N or -unset")
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
	if err := settings.Set(ctx, map[string]string{maxBidsField: strconv.Itoa(*maxBids)}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s = %d; nodes apply it at their next heartbeat\n", settings, maxBidsField, *maxBids)
	return nil
}
