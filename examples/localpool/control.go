package localpool

// Where a sharded pool keeps its layout: the layout file, or etcd (a
// member the pool starts, or a cluster it is given).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/examples/internal/layoutsrc"
	"github.com/indexkit/indexkit/examples/scatternode"

	"github.com/indexkit/indexkit/examples/internal/etcdserver"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// EtcdStart is the value of [Sharded.Etcd] that makes the pool start its
// own etcd member (under Config.Dir, on a free 127.0.0.1 port, stopped
// with the pool).
const EtcdStart = "start"

// EtcdAvailable reports whether the etcd binary the pool would start is
// installed (etcd on PATH, or Debian etcd-server's /usr/bin/etcd).
func EtcdAvailable() bool {
	_, err := etcdserver.Binary()
	return err == nil
}

// control is a sharded pool's control plane: its layout store and, on
// etcd, the client, the server the pool started and the layer's prefix.
type control struct {
	store keyspace.LayoutStore
	spec  string            // what the roles' -layout / Layout take
	etcd  *etcdlayout.Store // nil with the layout file
	close io.Closer         // the etcd client
	srv   *etcdserver.Server
}

// openControl sets up where the layout lives, as Sharded.Etcd says.
func (p *Pool) openControl(ctx context.Context) (*control, error) {
	sc := p.cfg.Sharded
	if sc.Etcd == "" {
		return &control{store: &keyspace.FileStore{Path: p.layoutPath()}, spec: p.layoutPath()}, nil
	}
	c := &control{}
	eps := sc.Etcd
	if eps == EtcdStart {
		srv, err := etcdserver.Start(ctx, filepath.Join(p.cfg.Dir, "etcd"), 1)
		if err != nil {
			return nil, fmt.Errorf("Sharded.Etcd: %w", err)
		}
		c.srv, eps = srv, srv.Endpoints()
		p.cfg.Logger.Info("etcd started for the layout", "endpoints", eps, "pids", srv.PIDs())
	}
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	c.spec = "etcd://" + eps + "/indexkit-pool-" + hex.EncodeToString(rb[:])
	st, closer, err := etcdlayout.Dial(c.spec)
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("Sharded.Etcd: %w", err)
	}
	c.store, c.etcd, c.close = st, st, closer
	return c, nil
}

// publishFirst makes l the layer's first layout.
func (c *control) publishFirst(l keyspace.Layout) error {
	if c.etcd == nil {
		return keyspace.Save(c.spec, l) // a new run starts a new file
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.etcd.Publish(ctx, 0, l)
	return err
}

// stop closes the client and stops the server the pool started.
func (c *control) stop() {
	if c == nil {
		return
	}
	if c.close != nil {
		c.close.Close()
	}
	if c.srv != nil {
		c.srv.Stop()
	}
}

// LayoutSpec is where the sharded roles take their layout from: the
// layout file's path, or etcd://ENDPOINTS/PREFIX.
func (p *Pool) LayoutSpec() string {
	if p.ctl == nil {
		return ""
	}
	return p.ctl.spec
}

// OnEtcd reports whether the pool's layout lives in etcd.
func (p *Pool) OnEtcd() bool { return p.ctl != nil && p.ctl.etcd != nil }

// driver takes the layer to a goal: a keyspace.Coordinator over the
// layout file, or the elected coordinator on etcd.
type driver interface {
	Drive(ctx context.Context, goal keyspace.Goal) error
}

type etcdDriver struct {
	st  *etcdlayout.Store
	cfg etcdlayout.CoordinateConfig
}

func (d etcdDriver) Drive(ctx context.Context, goal keyspace.Goal) error {
	return d.st.Coordinate(ctx, d.cfg, goal)
}

// etcdDriverFor is the pool's coordinator on etcd: it campaigns as
// "pool" and reads the processes' statuses from etcd.
func (p *Pool) etcdDriverFor(cc keyspace.CoordinatorConfig) driver {
	cc.Ingest, cc.Fronts, cc.Reload, cc.LayoutPath = nil, nil, nil, ""
	return etcdDriver{st: p.ctl.etcd, cfg: etcdlayout.CoordinateConfig{ID: "pool-" + strings.TrimPrefix(filepath.Base(p.cfg.Dir), "."), TTL: time.Second, Coordinator: cc}}
}

// etcdScatter is a sharded pool's front end on an etcd layout: it follows
// the layout's watch, keeps its presence and fences its answers, as
// examples/scatter -layout etcd://... does.
type etcdScatter struct {
	*scatternode.Scatter
	src   *layoutsrc.Source
	front *layoutsrc.Front
	log   *slog.Logger
}

func newEtcdScatter(ctx context.Context, cfg scatternode.Config, ln net.Listener, spec string, log *slog.Logger) (*etcdScatter, error) {
	src, err := layoutsrc.Open(spec)
	if err != nil {
		ln.Close()
		return nil, err
	}
	front := layoutsrc.NewFront(src)
	cfg.Fenced = front.Fenced
	sc, err := scatternode.New(ctx, cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		src.Close()
		return nil, err
	}
	s := &etcdScatter{Scatter: sc, src: src, front: front, log: log}
	err = front.Start(ctx, layoutsrc.FrontConfig{
		Name: sc.Addrs().Find, Status: sc.Status, TTL: time.Second, Logger: log,
		Apply: func(l keyspace.Layout) error {
			rc := sc.Config()
			rc.Layout, rc.Backends = &l, nil
			_, err := sc.Reload(rc)
			return err
		},
		Epoch: func() uint64 {
			if l := sc.Config().Layout; l != nil {
				return l.Epoch
			}
			return 0
		},
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Run serves and follows the layout until ctx ends.
func (s *etcdScatter) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	fctx, cancel := context.WithCancel(ctx)
	wg.Go(func() {
		s.front.Run(fctx, func(err error) { s.log.Error("layout not applied; keeping the one in force", "err", err) })
	})
	err := s.Scatter.Run(ctx)
	cancel()
	wg.Wait()
	return err
}

// Close revokes the presence and closes the front end.
func (s *etcdScatter) Close() error {
	err := errors.Join(s.front.Close(), s.Scatter.Close())
	s.src.Close()
	return err
}
