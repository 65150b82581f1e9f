package etcdlayout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// ErrNotLeader is wrapped by the error of a publish through a
// [Leadership] that was lost: another coordinator may be in charge.
var ErrNotLeader = errors.New("etcdlayout: no longer the elected coordinator")

// Leadership is a coordinator's term, won in the election under the
// store's prefix ([Store.Campaign]). The election is etcd's usual one:
// each campaigner writes a key of its own under <prefix>coordinator/,
// bound to a lease it keeps alive, and the one whose key was created
// first leads; the others each wait for the key just before theirs to
// go. A term ends when its lease does (the coordinator died, or could not
// renew it for TTL) or at Resign.
//
// Its [Leadership.Store] publishes only while the term lasts: each
// publish compares, in the same transaction, that the term's key still
// exists as created, so a coordinator that was paused and deposed cannot
// publish over its successor.
type Leadership struct {
	s     *Store
	id    string
	lease int64
	key   string // the term's election key
	rev   int64  // its create revision

	cancel context.CancelFunc
	done   chan struct{} // closed when the term ends
	once   sync.Once
}

func (s *Store) electionPrefix() string { return s.prefix + KeyElection + "/" }

// Campaign waits until the caller, named id, is the elected coordinator
// of the store's layer, or ctx ends. ttl (whole seconds; 0: DefaultTTL) is
// how long the term outlives a coordinator that dies: another campaigner
// wins at most ttl after its last renewal.
func (s *Store) Campaign(ctx context.Context, id string, ttl time.Duration) (*Leadership, error) {
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < time.Second || ttl%time.Second != 0 {
		return nil, fmt.Errorf("etcdlayout: campaign TTL %v must be whole seconds", ttl)
	}
	lease, granted, err := s.cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return nil, fmt.Errorf("etcdlayout: campaign: grant: %w", err)
	}
	kctx, cancel := context.WithCancel(s.ctx)
	l := &Leadership{s: s, id: id, lease: lease, key: s.electionPrefix() + strconv.FormatInt(lease, 16), cancel: cancel, done: make(chan struct{})}
	go l.keepAlive(kctx, time.Duration(granted)*time.Second)
	fail := func(err error) (*Leadership, error) {
		l.Resign(context.Background())
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("etcdlayout: campaign as %s: %w", id, err)
	}
	res, err := s.cli.Txn(ctx, []etcdjson.Cmp{{Key: l.key, Create: true, Rev: 0}},
		[]etcdjson.Op{{Key: l.key, Value: id, Lease: lease, Put: true}}, []etcdjson.Op{{Key: l.key}})
	if err != nil {
		return fail(err)
	}
	l.rev = res.Revision
	if !res.Succeeded && len(res.Gets) > 0 && len(res.Gets[0]) > 0 {
		l.rev = res.Gets[0][0].CreateRevision
	}
	for {
		kvs, rev, err := s.cli.GetPrefix(ctx, s.electionPrefix(), true, 0)
		if err != nil {
			return fail(err)
		}
		mine := -1
		for i, kv := range kvs {
			if string(kv.Key) == l.key {
				mine = i
				break
			}
		}
		switch {
		case mine < 0:
			return fail(errors.New("the campaign key is gone (its lease expired)"))
		case mine == 0:
			return l, nil
		}
		// Wait for the key before ours to go, looking again at least
		// every second in case the watch misses it.
		pred := string(kvs[mine-1].Key)
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		errGone := errors.New("gone")
		werr := s.cli.Watch(wctx, pred, false, rev+1, func(evs []etcdjson.Event) error {
			for _, ev := range evs {
				if ev.Delete {
					return errGone
				}
			}
			return nil
		})
		wcancel()
		select {
		case <-l.done:
			return fail(errors.New("the campaign's lease was lost"))
		default:
		}
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		_ = werr
	}
}

// keepAlive renews the term's lease every ttl/3 and ends the term when
// etcd says the lease is gone, or no renewal was confirmed for ttl.
func (l *Leadership) keepAlive(ctx context.Context, ttl time.Duration) {
	defer l.end()
	valid := time.Now().Add(ttl)
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, ttl/3)
		got, err := l.s.cli.KeepAliveOnce(rctx, l.lease)
		cancel()
		switch {
		case err == nil:
			valid = sent.Add(time.Duration(got) * time.Second)
		case errors.Is(err, etcdjson.ErrLeaseNotFound):
			return
		}
		if time.Now().After(valid) {
			return
		}
	}
}

func (l *Leadership) end() { l.once.Do(func() { close(l.done) }) }

// Leader returns the id of the elected coordinator, or "" when there is
// none.
func (s *Store) Leader(ctx context.Context) (string, error) {
	kvs, _, err := s.cli.GetPrefix(ctx, s.electionPrefix(), true, 1)
	if err != nil {
		return "", fmt.Errorf("etcdlayout: read the leader: %w", err)
	}
	if len(kvs) == 0 {
		return "", nil
	}
	return string(kvs[0].Value), nil
}

// Done is closed when the term ends: its lease expired, was revoked
// (Resign), or could not be renewed for its TTL, or the store was closed.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Resign ends the term at once (it revokes the lease, which deletes the
// term's key), so that another campaigner takes over without waiting for
// the TTL. It is idempotent.
func (l *Leadership) Resign(ctx context.Context) error {
	l.cancel()
	l.end()
	err := l.s.cli.Revoke(ctx, l.lease)
	if errors.Is(err, etcdjson.ErrLeaseNotFound) {
		err = nil
	}
	return err
}

// Store returns the layout store as seen by this term: Load, Watch,
// Statuses and Changed as the store's, Publish fenced by the term.
func (l *Leadership) Store() *FencedStore { return &FencedStore{Store: l.s, l: l} }

// FencedStore is a [Store] whose Publish succeeds only while a
// [Leadership] lasts.
type FencedStore struct {
	*Store
	l *Leadership
}

// Publish is [Store.Publish] with the term's compare; it wraps
// [ErrNotLeader] when the term is over.
func (f *FencedStore) Publish(ctx context.Context, prev keyspace.Revision, next keyspace.Layout) (keyspace.Revision, error) {
	return f.Store.publish(ctx, prev, next, []etcdjson.Cmp{{Key: f.l.key, Create: true, Rev: f.l.rev}})
}
