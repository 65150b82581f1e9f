package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// fleetStore is what the fleet needs of its lease store: both
// lease/redis and lease/etcd implement it.
type fleetStore interface {
	lease.Store
	lease.Lister
	lease.MaxBidsSetter
}

// The values of -store.
const (
	storeRedis = "redis"
	storeEtcd  = "etcd"
)

// storeFlags choose the fleet's coordination store: -store, -redis and
// -etcd, shared by node, demo, sim and set.
type storeFlags struct {
	Store string // storeRedis or storeEtcd
	Redis string // address
	Etcd  string // comma-separated endpoints
}

func (s *storeFlags) register(fs *flag.FlagSet, redisHelp, etcdHelp string) {
	fs.StringVar(&s.Store, "store", s.Store, "coordination store of the catalog and the side tables: redis or etcd")
	fs.StringVar(&s.Redis, "redis", s.Redis, redisHelp)
	fs.StringVar(&s.Etcd, "etcd", s.Etcd, etcdHelp)
}

// check validates the flags after fs parsed them: -store names a known
// store, and the address flag of the other store was not given.
func (s storeFlags) check(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch s.Store {
	case storeRedis:
		if given["etcd"] {
			return errors.New("-etcd is given but -store is redis; add -store etcd")
		}
	case storeEtcd:
		if given["redis"] {
			return errors.New("-redis is given but -store is etcd")
		}
		for _, ep := range strings.Split(s.Etcd, ",") {
			if s.Etcd != "" && strings.TrimSpace(ep) == "" {
				return fmt.Errorf("-etcd %q has an empty endpoint", s.Etcd)
			}
		}
	default:
		return fmt.Errorf("-store %q: want redis or etcd", s.Store)
	}
	return nil
}

func (s storeFlags) endpoints() []string {
	var eps []string
	for _, ep := range strings.Split(s.Etcd, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	return eps
}

// args returns the flags that give a node s.
func (s storeFlags) args() []string {
	if s.Store == storeEtcd {
		return []string{"-store", storeEtcd, "-etcd", s.Etcd}
	}
	return []string{"-store", storeRedis, "-redis", s.Redis}
}

// String names the store for messages: "redis 127.0.0.1:6379".
func (s storeFlags) String() string {
	if s.Store == storeEtcd {
		return "etcd " + s.Etcd
	}
	return "redis " + s.Redis
}

// checkEtcdTiming refuses timings lease/etcd cannot keep: its TTL, auction
// window and liveness window are etcd lease TTLs, whole seconds.
func (t tuning) checkEtcdTiming() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"-ttl", t.TTL}, {"-window", t.Window}, {"-liveness", t.Liveness}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			return fmt.Errorf("-store etcd: %s %v is not a whole number of seconds ≥ 1s (lease/etcd keeps it as an etcd lease TTL, which is whole seconds)", d.flag, d.v)
		}
	}
	return nil
}

// backend is a connection to the fleet's coordination store.
type backend struct {
	flags storeFlags
	rdb   *goredis.Client  // with -store redis
	etcd  *clientv3.Client // with -store etcd
}

// dial connects to the store sf names and checks that it answers: Redis
// with PING, etcd with a linearizable read (so a quorum is up).
// poolSize bounds the Redis connections (0: go-redis's default).
func dial(ctx context.Context, sf storeFlags, poolSize int) (*backend, error) {
	b := &backend{flags: sf}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	switch sf.Store {
	case storeEtcd:
		eps := sf.endpoints()
		if len(eps) == 0 {
			return nil, errors.New("-store etcd: no -etcd endpoints")
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("etcd at %s: %w", sf.Etcd, err)
		}
		if _, err := cli.Get(pctx, "fleet-ping", clientv3.WithCountOnly()); err != nil {
			_ = cli.Close()
			return nil, fmt.Errorf("etcd at %s unreachable: %w", sf.Etcd, err)
		}
		b.etcd = cli
	default:
		// MaxRetries -1: see lease/redis, a retried script may run twice.
		b.rdb = goredis.NewClient(&goredis.Options{Addr: sf.Redis, PoolSize: poolSize, MaxRetries: -1})
		if err := b.rdb.Ping(pctx).Err(); err != nil {
			_ = b.rdb.Close()
			return nil, fmt.Errorf("redis at %s unreachable: %w", sf.Redis, err)
		}
	}
	return b, nil
}

// etcdStorePrefix is where lease/etcd keeps the fleet's catalog under the
// fleet's prefix P: P+"lease/" (its rows are P+"lease/r/<item>", …), so
// its watch of its own prefix never sees the side tables' keys
// (P+"fleet/…").
func etcdStorePrefix(prefix string) string { return prefix + "lease/" }

// newStore returns the lease store of the fleet with prefix.
func (b *backend) newStore(prefix string, opts ...lease.Option) (fleetStore, error) {
	if b.etcd != nil {
		return leaseetcd.New(b.etcd, etcdStorePrefix(prefix), opts...)
	}
	return leaseredis.New(b.rdb, prefix, opts...)
}

// tables returns the side tables of the fleet with prefix.
func (b *backend) tables(prefix string) sideTables {
	if b.etcd != nil {
		return etcdTables(b.etcd, prefix)
	}
	return redisTables(b.rdb, prefix)
}

// deletePrefix deletes every key of the fleet with prefix: the lease
// store's and the side tables'.
func (b *backend) deletePrefix(ctx context.Context, prefix string) error {
	if b.etcd != nil {
		if _, err := b.etcd.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
			return fmt.Errorf("delete %s…: %w", prefix, err)
		}
		return nil
	}
	return unlinkPrefix(ctx, b.rdb, prefix)
}

// Close closes the connection.
func (b *backend) Close() error {
	if b.etcd != nil {
		return b.etcd.Close()
	}
	return b.rdb.Close()
}
