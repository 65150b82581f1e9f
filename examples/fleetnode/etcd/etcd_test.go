package etcd_test

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	fleetetcd "github.com/indexkit/indexkit/examples/fleetnode/etcd"
	"github.com/indexkit/indexkit/examples/fleetnode/tabletest"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The side tables pass the conformance suite on a real etcd, their keys
// where the fleet's documentation says (P+"fleet/<table>/<key>"), and
// DeletePrefix leaves no key behind.
func TestTables(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	prefix := etcdtest.Prefix(t, cli, "fleet")
	b := fleetetcd.New(cli)
	tabletest.Run(t, b, prefix)
	ctx := context.Background()
	resp, err := cli.Get(ctx, prefix+"fleet/settings/max-bids")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "3" {
		t.Fatalf("etcd key %sfleet/settings/max-bids: %+v %v; want 3", prefix, resp, err)
	}
	if err := b.DeletePrefix(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	if resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("keys left after DeletePrefix: %+v %v", resp, err)
	}
}
