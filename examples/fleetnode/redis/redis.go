package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/lease"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// Backend keeps a fleet in Redis: the catalog in lease/redis, and each
// side table in one hash beside it.
type Backend struct {
	rdb goredis.UniversalClient
}

// New returns the Backend on rdb, which the caller closes. The client
// must not retry commands (MaxRetries -1): a retried lease script may run
// twice.
func New(rdb goredis.UniversalClient) *Backend { return &Backend{rdb: rdb} }

// NewStore returns the lease store of the fleet with prefix
// (lease/redis, its keys under prefix).
func (b *Backend) NewStore(prefix string, opts ...lease.Option) (fleetnode.Store, error) {
	return leaseredis.New(b.rdb, prefix, opts...)
}

// fleetnode.Tables returns the side tables of the fleet with prefix.
func (b *Backend) Tables(prefix string) fleetnode.Tables { return redisTables(b.rdb, prefix) }

// DeletePrefix deletes every key of the fleet with prefix: the lease
// store's and the side tables' (SCAN and UNLINK, never KEYS: the server
// may be shared).
func (b *Backend) DeletePrefix(ctx context.Context, prefix string) error {
	return unlinkPrefix(ctx, b.rdb, prefix)
}

// pageSize bounds a List read: HSCAN's count.
const pageSize = 256

// Redis keys of the side tables, under the fleet's prefix P beside the
// lease store's own keys (P+"{item}:…", P+"nodes", P+"items"): one hash
// each.
func reposKey(prefix string) string    { return prefix + "fleet:repos" }    // item → clone URL
func addrsKey(prefix string) string    { return prefix + "fleet:addrs" }    // node → HTTP address
func settingsKey(prefix string) string { return prefix + "fleet:settings" } // setting → value
func handoffsKey(prefix string) string { return prefix + "fleet:handoffs" } // item → "commit node"

func redisTables(rdb goredis.UniversalClient, prefix string) fleetnode.Tables {
	return fleetnode.Tables{
		Addrs:    redisHash{rdb, addrsKey(prefix)},
		Repos:    redisHash{rdb, reposKey(prefix)},
		Settings: redisHash{rdb, settingsKey(prefix)},
		Handoffs: redisHash{rdb, handoffsKey(prefix)},
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
		return "", fmt.Errorf("%s: %q: %w", h, key, fleetnode.ErrNoEntry)
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

// unlinkPrefix deletes every key under prefix (SCAN + UNLINK, never KEYS:
// the server may be shared).
func unlinkPrefix(ctx context.Context, rdb goredis.UniversalClient, prefix string) error {
	var b strings.Builder
	for _, r := range prefix {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	match := b.String() + "*"
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return fmt.Errorf("scan %s: %w", match, err)
		}
		if len(keys) > 0 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("unlink: %w", err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
