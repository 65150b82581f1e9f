package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
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

// watchState is what a watch knows of the catalog: every row and every
// owner key, as of the revision it follows from, kept up to date from the
// watch's own events. It turns an event into a row without a read.
type watchState struct {
	rows   map[string]row
	owners map[string][]byte // the owner keys' values ("fence holder")
}

// statePage is how many keys one range read of a watch's start returns.
const statePage = 1000

// loadState reads every row and owner key at one revision, the current
// one, in pages, and returns them with that revision.
func (s *Store) loadState(ctx context.Context) (*watchState, int64, error) {
	st := &watchState{rows: map[string]row{}, owners: map[string][]byte{}}
	var rev int64
	for _, p := range []struct {
		prefix string
		put    func(id string, v []byte) error
	}{
		{s.rowKey(""), func(id string, v []byte) error {
			var r row
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("row %q: %w", id, err)
			}
			st.rows[id] = r
			return nil
		}},
		{s.ownKey(""), func(id string, v []byte) error { st.owners[id] = v; return nil }},
	} {
		from, end := p.prefix, clientv3.GetPrefixRangeEnd(p.prefix)
		for {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(statePage)}
			if rev != 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			resp, err := s.cli.Get(ctx, from, opts...)
			if err != nil {
				return nil, 0, err
			}
			if rev == 0 {
				rev = resp.Header.Revision
			}
			for _, k := range resp.Kvs {
				if err := p.put(strings.TrimPrefix(string(k.Key), p.prefix), k.Value); err != nil {
					return nil, 0, err
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	return st, rev, nil
}

// row returns item id's row as the state has it; ok is false if it has
// none. The feed does not follow the expiry keys, so the row carries no
// Expiry: a lapse is an event of its own (the owner key's deletion).
func (st *watchState) row(id string) (lease.Row, bool) {
	r, ok := st.rows[id]
	if !ok {
		return lease.Row{}, false
	}
	sn := &snap{id: id, r: r, exists: true}
	if v, ok := st.owners[id]; ok {
		sn.own = &kv{val: v}
	}
	return sn.public(), true
}

// Watch implements [lease.Watcher] with an etcd watch on the owner keys,
// pending markers and rows (one key range that leaves out the expiry keys
// every renewal writes and the node keys every heartbeat writes, so the
// server does not send them to each watcher). At its start, and after
// each Reset, it reads every row and owner key (in pages, at one
// revision); from then on the events themselves keep that copy current,
// so a change costs the watcher no read. It yields a Reset, then for each
// revision that wrote a row or an owner key (a grant, a release, or the
// lapse of a grant's etcd lease), the rows of the items it touched as
// that revision left them. Renewals (which write only the expiry key),
// window keys, pending markers and node keys are left out, and the rows
// carry no Expiry (the expiry keys are not followed; a lapse is reported
// as it happens). After a compaction that outran the feed (etcd's
// ErrCompacted) or a lost watch it yields a Reset again and starts over
// from a fresh read. It ends with an error wrapping lease.ErrClosed when
// the store is closed, and silently when ctx ends.
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
			st, rev, err := s.loadState(ctx)
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
			if !s.follow(ctx, st, rev+1, yield) {
				return
			}
			if ended() {
				return
			}
		}
	}
}

// follow yields the changes from revision from on, applying each event
// to st first; it returns false when the consumer stopped, true when the
// watch must start again.
func (s *Store) follow(ctx context.Context, st *watchState, from int64, yield func(lease.Change, error) bool) bool {
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
		// flush yields the rows of items as rev left them; false when the
		// consumer stopped.
		flush := func() bool {
			for _, id := range items {
				if r, ok := st.row(id); ok && !yield(lease.Change{Row: r}, nil) {
					return false
				}
			}
			items = items[:0]
			return true
		}
		for _, ev := range wr.Events {
			key := string(ev.Kv.Key)
			var id string
			isRow := strings.HasPrefix(key, rowP)
			switch {
			case isRow:
				id = key[len(rowP):]
			case strings.HasPrefix(key, ownP):
				id = key[len(ownP):]
			default:
				continue
			}
			if ev.Kv.ModRevision != rev {
				// The rows of one revision are yielded once all of its
				// events are applied: a grant writes the row and the
				// owner key.
				if !flush() {
					return false
				}
				rev = ev.Kv.ModRevision
			}
			del := ev.Type == clientv3.EventTypeDelete
			switch {
			case isRow && del:
				delete(st.rows, id)
			case isRow:
				var r row
				if err := json.Unmarshal(ev.Kv.Value, &r); err != nil {
					yield(lease.Change{}, fmt.Errorf("lease/etcd: watch: row %q: %w", id, err))
					return false
				}
				st.rows[id] = r
			case del:
				delete(st.owners, id)
			default:
				st.owners[id] = ev.Kv.Value
			}
			if !slices.Contains(items, id) {
				items = append(items, id)
			}
		}
		if !flush() {
			return false
		}
	}
	return true
}
