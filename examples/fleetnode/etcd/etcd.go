package etcd

import (
	"context"
	"fmt"
	"maps"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
)

// Backend keeps a fleet in etcd: the catalog in lease/etcd under
// P+"lease/", and each side table entry in a key under P+"fleet/".
type Backend struct {
	cli *clientv3.Client
}

// New returns the Backend on cli, which the caller closes.
func New(cli *clientv3.Client) *Backend { return &Backend{cli: cli} }

// storePrefix is where lease/etcd keeps the fleet's catalog under the
// fleet's prefix P: P+"lease/" (its rows are P+"lease/r/<item>", …), so
// its watch of its own prefix never sees the side tables' keys
// (P+"fleet/…").
func storePrefix(prefix string) string { return prefix + "lease/" }

// NewStore returns the lease store of the fleet with prefix (lease/etcd,
// under prefix+"lease/", with lease.WithoutRowExpiry: renewals write
// nothing). It refuses a TTL, auction window or liveness window that is
// not whole seconds, as lease/etcd does.
func (b *Backend) NewStore(prefix string, opts ...lease.Option) (fleetnode.Store, error) {
	// Renewals write nothing: the fleet's agents learn lapses from the
	// change feed, never from a row's Expiry (lease/etcd's doc).
	return leaseetcd.New(b.cli, storePrefix(prefix), append(opts, lease.WithoutRowExpiry())...)
}

// Tables returns the side tables of the fleet with prefix.
func (b *Backend) Tables(prefix string) fleetnode.Tables { return etcdTables(b.cli, prefix) }

// DeletePrefix deletes every key of the fleet with prefix: the lease
// store's and the side tables'.
func (b *Backend) DeletePrefix(ctx context.Context, prefix string) error {
	if _, err := b.cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("delete %s…: %w", prefix, err)
	}
	return nil
}

// pageSize bounds a List read: keys per range read.
const pageSize = 256

// txnOps bounds the operations of one transaction of Set or Delete,
// below the server's default --max-txn-ops of 128.
const txnOps = 100

// etcd keys of the side tables, under the fleet's prefix P; the lease
// store's keys are under P+"lease/" (see storePrefix), so that its
// watch never sees a side table's write.
func etcdTableKey(prefix, table string) string { return prefix + "fleet/" + table + "/" }

func etcdTables(cli *clientv3.Client, prefix string) fleetnode.Tables {
	return fleetnode.Tables{
		Addrs:    etcdTable{cli, etcdTableKey(prefix, "addrs")},
		Repos:    etcdTable{cli, etcdTableKey(prefix, "repos")},
		Settings: etcdTable{cli, etcdTableKey(prefix, "settings")},
		Handoffs: etcdTable{cli, etcdTableKey(prefix, "handoffs")},
	}
}

// etcdTable is a table of etcd keys: the entry k is the key dir+k.
type etcdTable struct {
	cli *clientv3.Client
	dir string
}

func (t etcdTable) String() string { return "etcd keys " + t.dir + "…" }

func (t etcdTable) Get(ctx context.Context, key string) (string, error) {
	resp, err := t.cli.Get(ctx, t.dir+key)
	if err != nil {
		return "", fmt.Errorf("%s: get %q: %w", t, key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%s: %q: %w", t, key, fleetnode.ErrNoEntry)
	}
	return string(resp.Kvs[0].Value), nil
}

// Set writes the entries in transactions of at most txnOps puts, in key
// order.
func (t etcdTable) Set(ctx context.Context, entries map[string]string) error {
	keys := slices.Sorted(maps.Keys(entries))
	for chunk := range slices.Chunk(keys, txnOps) {
		ops := make([]clientv3.Op, len(chunk))
		for i, k := range chunk {
			ops[i] = clientv3.OpPut(t.dir+k, entries[k])
		}
		if _, err := t.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("%s: set %d entries: %w", t, len(chunk), err)
		}
	}
	return nil
}

func (t etcdTable) Delete(ctx context.Context, keys ...string) error {
	for chunk := range slices.Chunk(keys, txnOps) {
		ops := make([]clientv3.Op, len(chunk))
		for i, k := range chunk {
			ops[i] = clientv3.OpDelete(t.dir + k)
		}
		if _, err := t.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("%s: delete: %w", t, err)
		}
	}
	return nil
}

// List reads the table in pages of pageSize keys, each page at the
// revision of the first, so the result is one consistent snapshot (as
// long as the server has not compacted that revision away meanwhile).
func (t etcdTable) List(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	end := clientv3.GetPrefixRangeEnd(t.dir)
	from := t.dir
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := t.cli.Get(ctx, from, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: list: %w", t, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			out[string(kv.Key)[len(t.dir):]] = string(kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func (t etcdTable) Clear(ctx context.Context) error {
	if _, err := t.cli.Delete(ctx, t.dir, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("%s: clear: %w", t, err)
	}
	return nil
}
