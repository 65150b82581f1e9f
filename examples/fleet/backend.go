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

	"github.com/indexkit/indexkit/examples/fleetnode"
	fleetetcd "github.com/indexkit/indexkit/examples/fleetnode/etcd"
	fleetredis "github.com/indexkit/indexkit/examples/fleetnode/redis"
)

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

// backend is a connection to the fleet's coordination store: the
// fleetnode.Backend on it, and the client the program closes.
type backend struct {
	fleetnode.Backend
	// DeletePrefix deletes every key of the fleet with a prefix.
	DeletePrefix func(ctx context.Context, prefix string) error
	flags        storeFlags
	rdb          *goredis.Client  // with -store redis
	etcd         *clientv3.Client // with -store etcd
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
		eb := fleetetcd.New(cli)
		b.Backend, b.DeletePrefix = eb, eb.DeletePrefix
	default:
		// MaxRetries -1: see lease/redis, a retried script may run twice.
		b.rdb = goredis.NewClient(&goredis.Options{Addr: sf.Redis, PoolSize: poolSize, MaxRetries: -1})
		if err := b.rdb.Ping(pctx).Err(); err != nil {
			_ = b.rdb.Close()
			return nil, fmt.Errorf("redis at %s unreachable: %w", sf.Redis, err)
		}
		rb := fleetredis.New(b.rdb)
		b.Backend, b.DeletePrefix = rb, rb.DeletePrefix
	}
	return b, nil
}

// Close closes the connection.
func (b *backend) Close() error {
	if b.etcd != nil {
		return b.etcd.Close()
	}
	return b.rdb.Close()
}
