// Package tabletest is the conformance suite of a fleet Backend's side
// tables (fleetnode.Tables): every Backend passes it on its real store.
package tabletest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/indexkit/indexkit/examples/fleetnode"
)

// Entries is how many entries Run writes to one table: more than a page
// of a List read and than a transaction of a Set holds in either backend.
const Entries = 2*256 + 7

// Run checks the table contract on b's tables under prefix, which must
// be empty: Set, Get, List over Entries entries, Delete, Clear, a missing
// key's fleetnode.ErrNoEntry, and tables that keep apart.
func Run(t *testing.T, b fleetnode.Backend, prefix string) {
	t.Helper()
	ctx := context.Background()
	tab := b.Tables(prefix)
	want := map[string]string{}
	for i := range Entries {
		want[fmt.Sprintf("node-%04d", i)] = fmt.Sprintf("127.0.0.1:%d", 10000+i)
	}
	if err := tab.Addrs.Set(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, err := tab.Addrs.Get(ctx, "node-0300"); err != nil || got != want["node-0300"] {
		t.Fatalf("Get node-0300 = %q, %v; want %q", got, err, want["node-0300"])
	}
	got, err := tab.Addrs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("List: %d entries, want %d (equal: false)", len(got), len(want))
	}
	if _, err := tab.Repos.Get(ctx, "node-0001"); !errors.Is(err, fleetnode.ErrNoEntry) {
		t.Fatalf("Get in another table: %v, want ErrNoEntry", err)
	}
	if err := tab.Addrs.Delete(ctx, "node-0001", "node-0002", "no-such"); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Addrs.Get(ctx, "node-0001"); !errors.Is(err, fleetnode.ErrNoEntry) {
		t.Fatalf("Get after Delete: %v, want ErrNoEntry", err)
	}
	if got, _ := tab.Addrs.List(ctx); len(got) != len(want)-2 {
		t.Fatalf("List after Delete: %d entries, want %d", len(got), len(want)-2)
	}
	if err := tab.Settings.Set(ctx, map[string]string{fleetnode.SettingMaxBids: "3"}); err != nil {
		t.Fatal(err)
	}
	if err := tab.Addrs.Set(ctx, map[string]string{}); err != nil {
		t.Fatalf("Set of no entries: %v", err)
	}
	if err := tab.Addrs.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := tab.Addrs.List(ctx); err != nil || len(got) != 0 {
		t.Fatalf("List after Clear: %d entries, %v", len(got), err)
	}
	if v, err := tab.Settings.Get(ctx, fleetnode.SettingMaxBids); err != nil || v != "3" {
		t.Fatalf("settings after clearing addrs: %q %v", v, err)
	}
	if other, err := b.Tables(prefix + "other:").Settings.List(ctx); err != nil || len(other) != 0 {
		t.Fatalf("the settings of another prefix: %v %v; want none", other, err)
	}
}
