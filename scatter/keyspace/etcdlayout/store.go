package etcdlayout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Keys under a store's prefix.
const (
	// KeyLayout holds the layout in force, as JSON.
	KeyLayout = "layout"
	// KeyLive is the directory of the processes' statuses: one key
	// live/<role>/<name> per process, bound to its lease.
	KeyLive = "live/"
	// KeyElection is the election prefix of the coordinators.
	KeyElection = "coordinator"
)

// ErrNoLayout is returned by Load when no layout was ever published.
var ErrNoLayout = errors.New("etcdlayout: no layout published")

// Store is a [keyspace.LayoutStore] and a [keyspace.StatusSource] on
// etcd. Create it with [New]; Close it when done (the client stays the
// caller's).
type Store struct {
	cli    *etcdjson.Client
	prefix string

	ctx    context.Context // ends at Close: the watch behind Changed
	cancel context.CancelFunc

	mu       sync.Mutex
	changed  chan struct{} // closed at the next change under prefix
	watching bool

	pmu       sync.Mutex
	presences map[*Presence]struct{} // Join's, kicked after Watch applies a layout
}

var (
	_ keyspace.LayoutStore  = (*Store)(nil)
	_ keyspace.StatusSource = (*Store)(nil)
)

// New returns a store that keeps its keys under prefix on cli. The prefix
// names the layer: several layers may share a cluster under different
// prefixes.
func New(cli *etcdjson.Client, prefix string) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	return &Store{cli: cli, prefix: prefix, ctx: ctx, cancel: cancel, changed: make(chan struct{}), presences: map[*Presence]struct{}{}}
}

// Close stops the store's background watch. It does not close the client.
func (s *Store) Close() error {
	s.cancel()
	return nil
}

// Prefix returns the store's key prefix.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) layoutKey() string { return s.prefix + KeyLayout }

func decode(kv []byte, rev int64) (keyspace.Layout, error) {
	var l keyspace.Layout
	if err := json.Unmarshal(kv, &l); err != nil {
		return keyspace.Layout{}, fmt.Errorf("%w: etcd revision %d: %w", keyspace.ErrInvalidLayout, rev, err)
	}
	if err := l.Validate(); err != nil {
		return keyspace.Layout{}, fmt.Errorf("etcd revision %d: %w", rev, err)
	}
	return l, nil
}

// Load returns the layout in force and its revision (the key's
// ModRevision). It wraps [ErrNoLayout] when none was published.
func (s *Store) Load(ctx context.Context) (keyspace.Layout, keyspace.Revision, error) {
	kv, _, err := s.cli.Get(ctx, s.layoutKey())
	if err != nil {
		return keyspace.Layout{}, 0, fmt.Errorf("etcdlayout: load %s: %w", s.layoutKey(), err)
	}
	if kv == nil {
		return keyspace.Layout{}, 0, fmt.Errorf("%w under %q", ErrNoLayout, s.prefix)
	}
	l, err := decode(kv.Value, kv.ModRevision)
	return l, keyspace.Revision(kv.ModRevision), err
}

// Publish makes next the layout in force in one transaction that
// compares the layout key's ModRevision with prev (0: no layout yet).
func (s *Store) Publish(ctx context.Context, prev keyspace.Revision, next keyspace.Layout) (keyspace.Revision, error) {
	return s.publish(ctx, prev, next, nil)
}

// publish is Publish with extra compares (a coordinator's leadership).
func (s *Store) publish(ctx context.Context, prev keyspace.Revision, next keyspace.Layout, extra []etcdjson.Cmp) (keyspace.Revision, error) {
	if err := next.Validate(); err != nil {
		return 0, err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return 0, fmt.Errorf("etcdlayout: encode layout: %w", err)
	}
	key := s.layoutKey()
	cmps := append([]etcdjson.Cmp{{Key: key, Rev: int64(prev)}}, extra...)
	resp, err := s.cli.Txn(ctx, cmps, []etcdjson.Op{{Key: key, Value: string(b), Put: true}}, []etcdjson.Op{{Key: key}})
	if err != nil {
		return 0, fmt.Errorf("etcdlayout: publish epoch %d: %w", next.Epoch, err)
	}
	if !resp.Succeeded {
		cur, at := "none", int64(0)
		if len(resp.Gets) > 0 && len(resp.Gets[0]) > 0 {
			at = resp.Gets[0][0].ModRevision
			cur = fmt.Sprintf("revision %d", at)
		}
		if at == int64(prev) {
			// The layout is as expected: an extra compare failed.
			return 0, fmt.Errorf("%w: publish epoch %d under %q", ErrNotLeader, next.Epoch, s.prefix)
		}
		return 0, fmt.Errorf("%w: publish epoch %d over revision %d, the layout is at %s", keyspace.ErrConflict, next.Epoch, prev, cur)
	}
	return keyspace.Revision(resp.Revision), nil
}

// Watch calls apply with the layout in force and with each one published
// later, until ctx ends. It follows the key with an etcd watch, and reads
// the key every [ResyncInterval] besides: a read needs the cluster's
// quorum, so a watch held by a member cut off from it, which would stay
// silent, is dropped and taken up again through another endpoint, and a
// layout the watch missed is applied from the read.
func (s *Store) Watch(ctx context.Context, apply func(keyspace.Layout) error, onError func(error)) error {
	report := func(err error) {
		if err != nil && onError != nil && ctx.Err() == nil {
			onError(err)
		}
	}
	var mu sync.Mutex
	var lastRev int64
	take := func(l keyspace.Layout, rev int64) {
		mu.Lock()
		defer mu.Unlock()
		if rev <= lastRev {
			return
		}
		lastRev = rev
		err := apply(l)
		report(err)
		if err == nil {
			s.kickPresences()
		}
	}
	for ctx.Err() == nil {
		l, rev, err := s.Load(ctx)
		if err != nil {
			report(err)
			if !sleep(ctx, retryDelay) {
				return nil
			}
			continue
		}
		take(l, int64(rev))
		wctx, cancel := context.WithCancel(ctx)
		go func() { // the resync read
			t := time.NewTicker(ResyncInterval)
			defer t.Stop()
			for {
				select {
				case <-wctx.Done():
					return
				case <-t.C:
				}
				l, rev, err := s.Load(wctx)
				if err != nil {
					cancel() // the watch's member may be cut off: start again
					return
				}
				take(l, int64(rev))
			}
		}()
		err = s.cli.Watch(wctx, s.layoutKey(), false, int64(rev)+1, func(evs []etcdjson.Event) error {
			for _, ev := range evs {
				if ev.Delete {
					report(fmt.Errorf("%w: the layout key %s was deleted", keyspace.ErrInvalidLayout, s.layoutKey()))
					continue
				}
				l, err := decode(ev.KV.Value, ev.KV.ModRevision)
				if err != nil {
					report(err)
					continue
				}
				take(l, ev.KV.ModRevision)
			}
			return nil
		})
		cancel()
		if err != nil {
			report(fmt.Errorf("etcdlayout: watch %s: %w", s.layoutKey(), err))
		}
		if !sleep(ctx, retryDelay) {
			return nil
		}
	}
	return nil
}

// kickPresences has every presence of the store write its status now: a
// layout was just applied.
func (s *Store) kickPresences() {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	for p := range s.presences {
		p.Kick()
	}
}

// ResyncInterval is how often a [Store.Watch] reads the layout besides
// its watch.
const ResyncInterval = 2 * time.Second

// Statuses returns the status each live process keeps under live/.
func (s *Store) Statuses(ctx context.Context) ([]keyspace.Status, error) {
	kvs, _, err := s.cli.GetPrefix(ctx, s.prefix+KeyLive, false, 0)
	if err != nil {
		return nil, fmt.Errorf("etcdlayout: read statuses: %w", err)
	}
	out := make([]keyspace.Status, 0, len(kvs))
	for _, kv := range kvs {
		var st keyspace.Status
		if err := json.Unmarshal(kv.Value, &st); err != nil {
			continue // a process that wrote garbage is not alive to us
		}
		if st.Name == "" {
			st.Name = strings.TrimPrefix(string(kv.Key), s.prefix+KeyLive)
		}
		out = append(out, st)
	}
	return out, nil
}

// Changed returns a channel closed at the next change of any key under
// the prefix (the layout, a status, a process that joins or whose lease
// expires). The first call starts a watch that runs until Close.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.watching {
		s.watching = true
		go s.watchAll()
	}
	return s.changed
}

func (s *Store) watchAll() {
	for s.ctx.Err() == nil {
		s.cli.Watch(s.ctx, s.prefix, true, 0, func([]etcdjson.Event) error {
			s.signal()
			return nil
		})
		s.signal() // the watch broke: whatever it would have told, look again
		if !sleep(s.ctx, retryDelay) {
			return
		}
	}
}

func (s *Store) signal() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Await returns once ok holds for the statuses of the live processes, or
// with ctx's error. It reads them again at each change under the prefix
// (and every second regardless): "every process of the layout reports
// epoch n" is a wait on etcd, not a poll of the processes.
func (s *Store) Await(ctx context.Context, ok func([]keyspace.Status) bool) error {
	for {
		changed := s.Changed()
		sts, err := s.Statuses(ctx)
		if err == nil && ok(sts) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}
