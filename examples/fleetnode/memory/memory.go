// Package memory is a fleet Backend held in this process's memory: the
// catalog in lease/memory and the side tables in maps, for tests,
// examples and fleets whose nodes all run in one process. It implements
// fleetnode.Backend and passes the side tables' conformance suite
// (fleetnode/tabletest).
//
// The nodes of a process share one Backend: the first NewStore of a
// prefix makes its lease store with that call's options, and every later
// NewStore of the prefix shares that store (the nodes of a fleet agree on
// their timing anyway; the store's auction hooks are the first node's).
// The store closes when every node that got it has closed it.
package memory

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/lease"
	leasememory "github.com/indexkit/indexkit/lease/memory"
)

// Backend keeps fleets in memory, by key prefix.
type Backend struct {
	mu     sync.Mutex
	stores map[string]*shared
	tables map[string]*table // by prefix + table name
}

// New returns an empty Backend.
func New() *Backend {
	return &Backend{stores: map[string]*shared{}, tables: map[string]*table{}}
}

// shared is a prefix's lease store and how many holders have it open.
type shared struct {
	*leasememory.Store
	open int
}

// handle is one NewStore's hold on a shared store: its Close releases
// the hold, and the last one closes the store.
type handle struct {
	*leasememory.Store
	b      *Backend
	prefix string
	once   sync.Once
}

// NewStore returns the lease store of the fleet with prefix: made with
// opts by the first call for prefix, shared by the later ones.
func (b *Backend) NewStore(prefix string, opts ...lease.Option) (fleetnode.Store, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stores[prefix]
	if s == nil {
		st, err := leasememory.New(opts...)
		if err != nil {
			return nil, err
		}
		s = &shared{Store: st}
		b.stores[prefix] = s
	}
	s.open++
	return &handle{Store: s.Store, b: b, prefix: prefix}, nil
}

// Close releases this hold on the store; the last one closes it (and a
// later NewStore of the prefix makes a new, empty one).
func (h *handle) Close() error {
	var err error
	h.once.Do(func() {
		h.b.mu.Lock()
		defer h.b.mu.Unlock()
		s := h.b.stores[h.prefix]
		if s == nil || s.Store != h.Store {
			return
		}
		if s.open--; s.open == 0 {
			delete(h.b.stores, h.prefix)
			err = s.Store.Close()
		}
	})
	return err
}

// Tables returns the side tables of the fleet with prefix.
func (b *Backend) Tables(prefix string) fleetnode.Tables {
	return fleetnode.Tables{
		Addrs:    b.table(prefix, "addrs"),
		Repos:    b.table(prefix, "repos"),
		Settings: b.table(prefix, "settings"),
		Handoffs: b.table(prefix, "handoffs"),
	}
}

func (b *Backend) table(prefix, name string) *table {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := prefix + "\x00" + name
	t := b.tables[key]
	if t == nil {
		t = &table{name: name, prefix: prefix, m: map[string]string{}}
		b.tables[key] = t
	}
	return t
}

// table is a side table in a map.
type table struct {
	name, prefix string
	mu           sync.Mutex
	m            map[string]string
}

func (t *table) String() string { return fmt.Sprintf("memory table %s of %s", t.name, t.prefix) }

func (t *table) Get(_ context.Context, key string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[key]
	if !ok {
		return "", fmt.Errorf("%s: %q: %w", t, key, fleetnode.ErrNoEntry)
	}
	return v, nil
}

func (t *table) Set(_ context.Context, entries map[string]string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	maps.Copy(t.m, entries)
	return nil
}

func (t *table) Delete(_ context.Context, keys ...string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		delete(t.m, k)
	}
	return nil
}

func (t *table) List(context.Context) (map[string]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.m), nil
}

func (t *table) Clear(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.m)
	return nil
}
