package layoutsrc

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// Front keeps a front end in step with an etcd layout: it follows the
// store's watch, keeps the front end's presence (role front) and fences
// its answers (see [Fence]). Both the reference binary (examples/scatter)
// and the local pool's front end run one.
//
//	f := layoutsrc.NewFront(src)
//	cfg.Fenced = f.Fenced                        // before scatternode.New
//	node, _ := scatternode.New(ctx, cfg, lns)
//	f.Start(ctx, layoutsrc.FrontConfig{...})     // once New has returned
//	go f.Run(ctx, onError)
//	defer f.Close()
type Front struct {
	src   *Source
	fence atomic.Pointer[Fence]
	pres  *etcdlayout.Presence
	apply func(keyspace.Layout) error
}

// FrontConfig says how a [Front] joins and applies layouts.
type FrontConfig struct {
	// Name is the front end's name among the live processes (its listen
	// address, say). Required.
	Name string
	// Status is its status (scatternode.Scatter.Status). Required.
	Status func() keyspace.Status
	// Apply takes a layout (scatternode.Scatter.Reload with it), Epoch the
	// epoch it reads by now. Front calls Apply one layout at a time and
	// never with one older than Epoch. Required.
	Apply func(keyspace.Layout) error
	Epoch func() uint64
	// TTL is the presence's lease TTL (0: etcdlayout.DefaultTTL).
	TTL time.Duration
	// Logger (nil: discard).
	Logger *slog.Logger
}

// NewFront returns the front of a front end whose layout is src's (an
// etcd source). Until [Front.Start] it is fenced.
func NewFront(src *Source) *Front { return &Front{src: src} }

// Fenced is scatternode.Config.Fenced: true until Start has joined, then
// the [Fence]'s.
func (f *Front) Fenced() bool {
	fc := f.fence.Load()
	return fc == nil || fc.Fenced()
}

// Start joins the live processes and sets up the fence.
func (f *Front) Start(ctx context.Context, cfg FrontConfig) error {
	if cfg.Name == "" || cfg.Status == nil || cfg.Apply == nil || cfg.Epoch == nil {
		return fmt.Errorf("layoutsrc: FrontConfig needs Name, Status, Apply and Epoch")
	}
	var mu sync.Mutex // the watch and the fence both apply layouts
	f.apply = func(l keyspace.Layout) error {
		mu.Lock()
		defer mu.Unlock()
		if l.Epoch < cfg.Epoch() {
			return nil // a watch catching up after the fence applied a newer one
		}
		return cfg.Apply(l)
	}
	p, err := f.src.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleFront, Name: cfg.Name, Status: cfg.Status, TTL: cfg.TTL, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	f.pres = p
	f.fence.Store(NewFence(f.src, p, f.apply, cfg.Logger))
	return nil
}

// Run follows the layout and runs the fence until ctx ends; errors of a
// read or of Apply go to onError.
func (f *Front) Run(ctx context.Context, onError func(error)) error {
	fc := f.fence.Load()
	if fc == nil {
		return fmt.Errorf("layoutsrc: Front.Run before Start")
	}
	var wg sync.WaitGroup
	wg.Go(func() { fc.Run(ctx) })
	err := f.src.Follow(ctx, 0, nil, f.apply, onError)
	wg.Wait()
	return err
}

// Close revokes the presence (its key goes at once).
func (f *Front) Close() error {
	if f.pres == nil {
		return nil
	}
	return f.pres.Close()
}
