package etcd_test

import (
	"os"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
	"github.com/indexkit/indexkit/lease/leasetest"
)

// The tests share one single-member etcd (started by the first test that
// needs it, killed at the end of the package's run); each store gets a
// fresh prefix and a client of its own.
var shared struct {
	once sync.Once
	c    *etcdtest.Cluster
	tb   *sharedTB
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.tb != nil {
		shared.tb.cleanup()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// endpoints returns the shared server's endpoints, starting it on first use.
func endpoints(t testing.TB) []string {
	t.Helper()
	lane.Integration(t, "starts an etcd cluster")
	if etcdtest.Binary() == "" {
		etcdtest.Unavailable(t, "etcd binary not found (install etcd-server or set ETCD_BIN)")
	}
	shared.once.Do(func() {
		shared.tb = &sharedTB{TB: t}
		shared.c = etcdtest.Start(shared.tb)
	})
	if shared.c == nil {
		t.Fatal("the shared etcd did not start")
	}
	return shared.c.Endpoints()
}

func client(t testing.TB) *clientv3.Client {
	t.Helper()
	return etcdtest.Client(t, endpoints(t)...)
}

func newStore(t *testing.T, _ *leasetest.Clock, opts ...lease.Option) lease.Store {
	cli := client(t)
	s, err := leaseetcd.New(cli, etcdtest.Prefix(t, cli, "lease"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
