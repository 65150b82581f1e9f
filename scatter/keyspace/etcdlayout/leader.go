package etcdlayout

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// ErrNotLeader is wrapped by the error of a publish through a
// [Leadership] that was lost: another coordinator may be in charge.
var ErrNotLeader = errors.New("etcdlayout: no longer the elected coordinator")

// Leadership is a coordinator's term, won in etcd's election under the
// store's prefix ([Store.Campaign]). Its [Leadership.Store] publishes only
// while the term lasts: each publish compares, in the same transaction,
// that the term's election key still exists, so a coordinator that was
// paused and deposed cannot publish over its successor.
type Leadership struct {
	s        *Store
	session  *concurrency.Session
	election *concurrency.Election
	key      string // the term's election key, kept: Resign clears the election's
	rev      int64  // its create revision
}

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
	sess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(int(ttl/time.Second)), concurrency.WithContext(s.ctx))
	if err != nil {
		return nil, fmt.Errorf("etcdlayout: campaign: session: %w", err)
	}
	e := concurrency.NewElection(sess, s.prefix+KeyElection)
	if err := e.Campaign(ctx, id); err != nil {
		sess.Close()
		return nil, fmt.Errorf("etcdlayout: campaign as %s: %w", id, err)
	}
	return &Leadership{s: s, session: sess, election: e, key: e.Key(), rev: e.Rev()}, nil
}

// Leader returns the id of the elected coordinator, or "" when there is
// none.
func (s *Store) Leader(ctx context.Context) (string, error) {
	resp, err := s.cli.Get(ctx, s.prefix+KeyElection+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("etcdlayout: read the leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// Done is closed when the term ends: the session's lease expired or was
// revoked (Resign), or the store was closed.
func (l *Leadership) Done() <-chan struct{} { return l.session.Done() }

// Resign ends the term at once, so that another campaigner takes over
// without waiting for the TTL.
func (l *Leadership) Resign(ctx context.Context) error {
	err := l.election.Resign(ctx)
	if cerr := l.session.Close(); err == nil {
		err = cerr
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
	cmp := clientv3.Compare(clientv3.CreateRevision(f.l.key), "=", f.l.rev)
	return f.Store.publish(ctx, prev, next, []clientv3.Cmp{cmp})
}
