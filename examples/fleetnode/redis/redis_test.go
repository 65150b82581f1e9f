package redis_test

import (
	"context"
	"os/exec"
	"testing"

	"go.uber.org/goleak"

	fleetredis "github.com/indexkit/indexkit/examples/fleetnode/redis"
	"github.com/indexkit/indexkit/examples/fleetnode/tabletest"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The side tables pass the conformance suite on a real Redis, each in
// its hash under the prefix, and DeletePrefix leaves no key behind.
func TestTables(t *testing.T) {
	addr := redistest.Addr()
	if _, err := exec.LookPath("redis-server"); err == nil {
		addr = redistest.StartServer(t).Addr()
	}
	c := redistest.Client(t, addr)
	prefix := redistest.Prefix(t, c, "fleet")
	b := fleetredis.New(c)
	tabletest.Run(t, b, prefix)
	ctx := context.Background()
	if v, err := c.HGet(ctx, prefix+"fleet:settings", "max-bids").Result(); err != nil || v != "3" {
		t.Fatalf("hash %sfleet:settings: %q %v; want max-bids 3", prefix, v, err)
	}
	if err := b.DeletePrefix(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	if keys, err := c.Keys(ctx, prefix+"*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("keys left after DeletePrefix: %v %v", keys, err)
	}
}
