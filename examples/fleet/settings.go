package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
)

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
	settings := b.Tables(*prefix).Settings
	if *unset {
		if err := settings.Clear(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s removed\n", settings)
		return nil
	}
	set := map[string]string{}
	if *maxBids >= 0 {
		set[fleetnode.SettingMaxBids] = strconv.Itoa(*maxBids)
	}
	if *rehydrate != "" {
		set[fleetnode.SettingRehydrate] = *rehydrate
	}
	if err := settings.Set(ctx, set); err != nil {
		return err
	}
	for k, v := range set {
		fmt.Fprintf(stderr, "%s: %s = %s; nodes apply it at their next heartbeat\n", settings, k, v)
	}
	return nil
}
