package kv

// CountEntries: an exact count of the multihashes with a live value, for
// indexes small enough to scan.

import (
	"context"
	"fmt"

	"github.com/indexkit/indexkit/store"
)

// CountLimit is the most multihashes [DB.CountEntries] counts: beyond it
// a count would cost a scan of a large index at every poll. At the limit
// a count takes 11 to 20 ms on store/pebble (130,000 multihashes, node
// options, a shared machine), and GET /stats counts at most once a
// second.
const CountLimit = 1 << 17

// CountEntries returns the number of multihashes that have at least one
// live value: exactly what [DB.All] would yield, so an entry whose values
// were all removed but not yet swept does not count. It scans the index,
// up to [CountLimit] multihashes; beyond that it stops and returns an
// error wrapping [store.ErrNotCounted], and later calls return that error
// at once, without a scan, until the store's Size has halved. A scan
// hands the engine what it buffers first (store/pebble's sorted runs), as
// All does.
func (db *DB) CountEntries(ctx context.Context) (int64, error) {
	size, err := db.Size(ctx)
	if err != nil {
		return 0, err
	}
	if over := db.countOver.Load(); over > 0 && size >= over/2 {
		return 0, fmt.Errorf("%s: count entries: over %d: %w", db.name, CountLimit, store.ErrNotCounted)
	}
	var (
		n    int64
		rerr error
	)
	rs := &records{db: db}
	for start := []byte{prefixIndex}; start != nil; {
		next, err := db.scanIndex(ctx, "count entries", start, func(_ []byte, ids []uint64) {
			if rerr != nil {
				return
			}
			for _, id := range ids {
				r, err := rs.get(id)
				if err != nil {
					rerr = err
					return
				}
				if r != nil {
					n++
					return
				}
			}
		})
		if err == nil && rerr != nil {
			err = db.wrap("count entries", rerr)
		}
		if err != nil {
			return 0, err
		}
		if n > db.countLimit {
			db.countOver.Store(max(size, 1))
			return 0, fmt.Errorf("%s: count entries: over %d: %w", db.name, CountLimit, store.ErrNotCounted)
		}
		if err := ctx.Err(); err != nil {
			return 0, db.wrap("count entries", err)
		}
		start = next
	}
	db.countOver.Store(0)
	return n, nil
}
