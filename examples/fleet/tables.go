package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// errNoEntry is what table.Get returns for a key it does not hold.
var errNoEntry = errors.New("no such entry")

// table is one of the fleet's side tables, kept beside the lease store's
// keys: string keys to string values. Node addresses, clone URLs and
// settings are each a table (see sideTables).
type table interface {
	// Get returns the value of key, or an error wrapping errNoEntry.
	Get(ctx context.Context, key string) (string, error)
	// Set writes every entry; an empty map writes nothing.
	Set(ctx context.Context, entries map[string]string) error
	// Delete removes keys; a missing key is not an error.
	Delete(ctx context.Context, keys ...string) error
	// List returns every entry, read in bounded pages.
	List(ctx context.Context) (map[string]string, error)
	// Clear removes every entry.
	Clear(ctx context.Context) error
	// String names where the table lives, for messages.
	String() string
}

// sideTables are the three tables a fleet keeps beside its lease store.
type sideTables struct {
	addrs    table // node name → HTTP address, written by each node
	repos    table // catalog item (a repo) → clone URL, written with the catalog
	settings table // setting → value: maxBidsField (see fleet set)
	handoffs table // item → "commit node": an index a stopping node offers (handoff.go)
}

// Redis keys of the side tables, under the fleet's prefix P beside the
// lease store's own keys (P+"{item}:…", P+"nodes", P+"items"): one hash
// each.
func reposKey(prefix string) string    { return prefix + "fleet:repos" }    // item → clone URL
func addrsKey(prefix string) string    { return prefix + "fleet:addrs" }    // node → HTTP address
func settingsKey(prefix string) string { return prefix + "fleet:settings" } // setting → value
func handoffsKey(prefix string) string { return prefix + "fleet:handoffs" } // item → "commit node"

func redisTables(rdb goredis.UniversalClient, prefix string) sideTables {
	return sideTables{
		addrs:    redisHash{rdb, addrsKey(prefix)},
		repos:    redisHash{rdb, reposKey(prefix)},
		settings: redisHash{rdb, settingsKey(prefix)},
		handoffs: redisHash{rdb, handoffsKey(prefix)},
	}
}

// redisHash is a table in one Redis hash.
type redisHash struct {
	rdb goredis.UniversalClient
	key string
}

func (h redisHash) String() string { return "Redis hash " + h.key }

func (h redisHash) Get(ctx context.Context, key string) (string, error) {
	v, err := h.rdb.HGet(ctx, h.key, key).Result()
	if errors.Is(err, goredis.Nil) {
		return "", fmt.Errorf("%s: %q: %w", h, key, errNoEntry)
	}
	if err != nil {
		return "", fmt.Errorf("%s: get %q: %w", h, key, err)
	}
	return v, nil
}

func (h redisHash) Set(ctx context.Context, entries map[string]string) error {
	if len(entries) == 0 {
		return nil
	}
	if err := h.rdb.HSet(ctx, h.key, entries).Err(); err != nil {
		return fmt.Errorf("%s: set %d entries: %w", h, len(entries), err)
	}
	return nil
}

func (h redisHash) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	if err := h.rdb.HDel(ctx, h.key, keys...).Err(); err != nil {
		return fmt.Errorf("%s: delete: %w", h, err)
	}
	return nil
}

func (h redisHash) List(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	var cursor uint64
	for {
		kvs, next, err := h.rdb.HScan(ctx, h.key, cursor, "", pageSize).Result()
		if err != nil {
			return nil, fmt.Errorf("%s: list: %w", h, err)
		}
		for i := 0; i+1 < len(kvs); i += 2 {
			out[kvs[i]] = kvs[i+1]
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

func (h redisHash) Clear(ctx context.Context) error {
	if err := h.rdb.Del(ctx, h.key).Err(); err != nil {
		return fmt.Errorf("%s: clear: %w", h, err)
	}
	return nil
}

// pageSize bounds a List read: keys per etcd range read, HSCAN count.
const pageSize = 256

// txnOps bounds the operations of one etcd transaction of Set or Delete,
// below the server's default --max-txn-ops of 128.
const txnOps = 100

// etcd keys of the side tables, under the fleet's prefix P; the lease
// store's keys are under P+"lease/" (see etcdStorePrefix), so that its
// watch never sees a side table's write.
func etcdTableKey(prefix, table string) string { return prefix + "fleet/" + table + "/" }

func etcdTables(cli *clientv3.Client, prefix string) sideTables {
	return sideTables{
		addrs:    etcdTable{cli, etcdTableKey(prefix, "addrs")},
		repos:    etcdTable{cli, etcdTableKey(prefix, "repos")},
		settings: etcdTable{cli, etcdTableKey(prefix, "settings")},
		handoffs: etcdTable{cli, etcdTableKey(prefix, "handoffs")},
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
		return "", fmt.Errorf("%s: %q: %w", t, key, errNoEntry)
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
