package layoutsrc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// Source is the layout of one process: a file or an etcd store. Create it
// with [Open].
type Source struct {
	spec  string
	store *etcdlayout.Store // nil for a file
	conn  io.Closer         // the store and its client

	closeOnce sync.Once
	closeErr  error
}

// Open returns the source spec names: etcd://HOST:PORT[,HOST:PORT...]/PREFIX
// for an etcd layout, anything else a layout file. It reads nothing: the
// etcd endpoints are dialled by the first Load.
func Open(spec string) (*Source, error) {
	if spec == "" {
		return nil, errors.New("layoutsrc: no layout: want a file or etcd://HOST:PORT[,HOST:PORT...]/PREFIX")
	}
	s := &Source{spec: spec}
	if etcdlayout.IsURL(spec) {
		st, conn, err := etcdlayout.Dial(spec)
		if err != nil {
			return nil, err
		}
		s.store, s.conn = st, conn
	}
	return s, nil
}

// String returns the spec the source was opened with.
func (s *Source) String() string { return s.spec }

// Etcd reports whether the layout is on etcd: then [Source.Follow] needs
// no poll interval or SIGHUP, and [Source.Join] keeps a presence.
func (s *Source) Etcd() bool { return s.store != nil }

// Store returns the etcd store, nil for a file.
func (s *Source) Store() *etcdlayout.Store { return s.store }

// Load returns the layout in force.
func (s *Source) Load(ctx context.Context) (keyspace.Layout, error) {
	if s.store == nil {
		return keyspace.Load(s.spec)
	}
	l, _, err := s.store.Load(ctx)
	return l, err
}

// Follow calls apply with the layout in force and each later one until
// ctx ends, and returns nil then. For a file it is keyspace.WatchFile
// with poll as the interval and reload as the SIGHUP channel; with
// neither (poll 0, reload nil) it returns nil at once, as a process that
// re-reads its file only when told does not follow it. For etcd it is the
// store's watch (etcdlayout.Store.Watch); poll and reload are not needed.
// Errors of a read or of apply go to onError, and the process keeps its
// layout.
func (s *Source) Follow(ctx context.Context, poll time.Duration, reload <-chan struct{}, apply func(keyspace.Layout) error, onError func(error)) error {
	if s.store != nil {
		return s.store.Watch(ctx, apply, onError)
	}
	if poll <= 0 && reload == nil {
		return nil
	}
	return keyspace.WatchFile(ctx, keyspace.WatchConfig{Path: s.spec, Interval: poll, Reload: reload, Apply: apply, OnError: onError})
}

// Join writes the process's status under its lease key in etcd
// (etcdlayout.Store.Join) and keeps it there, renewed and up to date,
// until the presence is closed. For a file it returns nil, nil: there is
// no presence to keep.
func (s *Source) Join(ctx context.Context, cfg etcdlayout.PresenceConfig) (*etcdlayout.Presence, error) {
	if s.store == nil {
		return nil, nil
	}
	return s.store.Join(ctx, cfg)
}

// Close closes the etcd store and its client (nothing for a file). It is
// idempotent; close the presences first.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		if s.conn != nil {
			s.closeErr = s.conn.Close()
		}
	})
	return s.closeErr
}

// Fence says when a front end must not answer as complete: while its
// presence is fenced (etcdlayout.Presence.Fenced: cut off from etcd for
// longer than its lease is sure to last, so the coordinator may have
// moved two epochs on without it), and after that until it has applied
// the layout in force, read again from etcd once it is back. Create it
// with [NewFence]; run [Fence.Run] while the front end runs.
type Fence struct {
	src   *Source
	p     *etcdlayout.Presence
	apply func(keyspace.Layout) error
	log   *slog.Logger

	stale atomic.Bool // fenced since the layout in force was last applied
}

// FenceInterval is how often [Fence.Run] looks at the presence.
const FenceInterval = 50 * time.Millisecond

// NewFence returns the fence of a front end whose presence is p, which
// takes a layout with apply (the same apply it follows the store with;
// it must be idempotent and keep a newer layout over an older one). A nil
// p (a layout file) is never fenced.
func NewFence(src *Source, p *etcdlayout.Presence, apply func(keyspace.Layout) error, log *slog.Logger) *Fence {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Fence{src: src, p: p, apply: apply, log: log}
}

// Fenced reports whether the front end must mark its answers partial.
// It is cheap and safe to call on every request.
func (f *Fence) Fenced() bool {
	if f == nil || f.p == nil {
		return false
	}
	if f.p.Fenced() {
		f.stale.Store(true)
		return true
	}
	return f.stale.Load()
}

// Run watches the presence until ctx ends and returns nil then: each time
// the presence comes back from a fenced spell, it loads the layout in
// force from etcd and applies it before the fence lifts, so that a front
// end whose watch is still catching up does not answer complete on the
// epoch it had when it was cut off.
func (f *Fence) Run(ctx context.Context) error {
	if f.p == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(FenceInterval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if f.p.Fenced() {
			f.stale.Store(true)
			if !warned {
				warned = true
				f.log.Warn("fenced: cut off from the layout store for longer than the presence's lease; answers are partial until it is back")
			}
			continue
		}
		if !f.stale.Load() {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		l, err := f.src.Load(lctx)
		cancel()
		if err != nil {
			continue
		}
		if err := f.apply(l); err != nil {
			f.log.Error("fence: the layout in force was not applied; answers stay partial", "epoch", l.Epoch, "err", err)
			continue
		}
		f.p.Kick() // report the epoch now
		if !f.p.Fenced() {
			f.stale.Store(false)
			warned = false
			f.log.Info("fence lifted: back on the layout store at the layout in force", "epoch", l.Epoch)
		}
	}
}
