package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indexkit/indexkit/lease"
)

// rowsPage is how many rows one range read of Rows returns.
const rowsPage = 256

// watchRetry is the pause before a watch that lost its connection starts
// again.
const watchRetry = 100 * time.Millisecond

// rows lists the catalog a page at a time, every page read at the
// revision of the first, so the listing is one snapshot: a range of up to
// rowsPage rows, then one read transaction of the owner, expiry and window
// keys of the page's items.
func (s *Store) rows(ctx context.Context) iter.Seq2[lease.Row, error] {
	return func(yield func(lease.Row, error) bool) {
		if err := s.begin(ctx, "rows"); err != nil {
			yield(lease.Row{}, err)
			return
		}
		base := s.rowKey("")
		from, end := base, clientv3.GetPrefixRangeEnd(base)
		var rev int64
		for {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(rowsPage)}
			if rev != 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			resp, err := s.cli.Get(ctx, from, opts...)
			if err != nil {
				yield(lease.Row{}, fmt.Errorf("lease/etcd: rows: %w", err))
				return
			}
			if rev == 0 {
				rev = resp.Header.Revision
			}
			sns := make([]*snap, 0, len(resp.Kvs))
			for _, k := range resp.Kvs {
				sn := &snap{id: strings.TrimPrefix(string(k.Key), base), exists: true, rowRev: k.ModRevision}
				if err := json.Unmarshal(k.Value, &sn.r); err != nil {
					yield(lease.Row{}, fmt.Errorf("lease/etcd: rows: row %q: %w", sn.id, err))
					return
				}
				sns = append(sns, sn)
			}
			if err := s.fill(ctx, sns, rev); err != nil {
				yield(lease.Row{}, fmt.Errorf("lease/etcd: rows: %w", err))
				return
			}
			for _, sn := range sns {
				if !yield(sn.public(), nil) {
					return
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				return
			}
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
}

// fill reads the owner, expiry and window keys of sns at rev, in read
// transactions of up to chunk keys.
func (s *Store) fill(ctx context.Context, sns []*snap, rev int64) error {
	const per = chunk / 3
	for i := 0; i < len(sns); i += per {
		part := sns[i:min(len(sns), i+per)]
		ops := make([]clientv3.Op, 0, 3*len(part))
		for _, sn := range part {
			ops = append(ops,
				clientv3.OpGet(s.ownKey(sn.id), clientv3.WithRev(rev)),
				clientv3.OpGet(s.expKey(sn.id), clientv3.WithRev(rev)),
				clientv3.OpGet(s.aucKey(sn.id), clientv3.WithRev(rev)))
		}
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return err
		}
		for j, sn := range part {
			g := func(k int) *clientv3.GetResponse {
				return (*clientv3.GetResponse)(resp.Responses[3*j+k].GetResponseRange())
			}
			sn.own = kvOf(g(0))
			if k := kvOf(g(1)); k != nil {
				sn.exp, _ = strconv.ParseInt(string(k.val), 10, 64)
			}
			sn.auc = kvOf(g(2))
		}
	}
	return nil
}

// rowAt reads item id's row as it was at revision rev; ok is false if it
// had none.
func (s *Store) rowAt(ctx context.Context, id string, rev int64) (lease.Row, bool, error) {
	resp, err := s.cli.Get(ctx, s.rowKey(id), clientv3.WithRev(rev))
	if err != nil {
		return lease.Row{}, false, err
	}
	k := kvOf(resp)
	if k == nil {
		return lease.Row{}, false, nil
	}
	sn := &snap{id: id, exists: true, rowRev: k.mod}
	if err := json.Unmarshal(k.val, &sn.r); err != nil {
		return lease.Row{}, false, fmt.Errorf("row %q: %w", id, err)
	}
	if err := s.fill(ctx, []*snap{sn}, rev); err != nil {
		return lease.Row{}, false, err
	}
	return sn.public(), true, nil
}

// Watch implements [lease.Watcher] with an etcd watch on the owner keys,
// pending markers and rows (one key range that leaves out the expiry keys
// every renewal writes and the node keys every heartbeat writes, so the
// server does not send them to each watcher). It yields a Reset, then for each revision that wrote a row, an
// owner key (a grant, a release, or the lapse of a grant's etcd lease) or
// nothing else of note, the rows of the items it touched as they were at
// that revision (read with one more request each). Renewals (which write
// only the expiry key), window keys, pending markers and node keys are
// left out. After a compaction that outran the feed (etcd's ErrCompacted)
// or a lost watch it yields a Reset again and resumes from the current
// revision. It ends with an error wrapping lease.ErrClosed when the store
// is closed, and silently when ctx ends.
func (s *Store) Watch(ctx context.Context) iter.Seq2[lease.Change, error] {
	return func(yield func(lease.Change, error) bool) {
		if err := s.begin(ctx, "watch"); err != nil {
			yield(lease.Change{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		ended := func() bool {
			if s.closed.Load() {
				yield(lease.Change{}, fmt.Errorf("lease/etcd: watch: %w", lease.ErrClosed))
				return true
			}
			return ctx.Err() != nil
		}
		for {
			resp, err := s.cli.Get(ctx, s.rowKey(""), clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				if ended() {
					return
				}
				select {
				case <-time.After(watchRetry):
				case <-ctx.Done():
				}
				continue
			}
			if !yield(lease.Change{Reset: true}, nil) {
				return
			}
			if !s.follow(ctx, resp.Header.Revision+1, yield) {
				return
			}
			if ended() {
				return
			}
		}
	}
}

// follow yields the changes from revision from on; it returns false when
// the consumer stopped, true when the watch must start again.
func (s *Store) follow(ctx context.Context, from int64, yield func(lease.Change, error) bool) bool {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	rowP, ownP := s.rowKey(""), s.ownKey("")
	// One range, [P+"o/", P+"s/"), holds the owner keys, the pending
	// markers and the rows, and leaves out the expiry keys (written by
	// every renewal), window keys and node keys (every heartbeat): a
	// watcher is not sent what it would drop.
	for wr := range s.cli.Watch(wctx, ownP, clientv3.WithRange(s.prefix+"s/"), clientv3.WithRev(from)) {
		if wr.Err() != nil {
			return true // compacted, or the leader lost: Reset and start again
		}
		var rev int64
		var items []string
		// flush yields the rows of items at rev: done is false when the
		// consumer stopped, err set when a row could not be read (a
		// compaction, a lost connection).
		flush := func() (done bool, err error) {
			for _, id := range items {
				r, ok, err := s.rowAt(ctx, id, rev)
				if err != nil {
					return true, err
				}
				if ok && !yield(lease.Change{Row: r}, nil) {
					return false, nil
				}
			}
			items = items[:0]
			return true, nil
		}
		for _, ev := range wr.Events {
			key := string(ev.Kv.Key)
			var id string
			switch {
			case strings.HasPrefix(key, rowP):
				id = key[len(rowP):]
			case strings.HasPrefix(key, ownP):
				id = key[len(ownP):]
			default:
				continue
			}
			if ev.Kv.ModRevision != rev {
				if more, err := flush(); !more || err != nil {
					return more
				}
				rev = ev.Kv.ModRevision
			}
			dup := false
			for _, x := range items {
				dup = dup || x == id
			}
			if !dup {
				items = append(items, id)
			}
		}
		if more, err := flush(); !more || err != nil {
			return more
		}
	}
	return true
}
