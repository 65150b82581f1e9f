package scale

// The layout store of the sharded run, and the time a new epoch takes to
// reach every process on etcd.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/indexkit/indexkit/examples/internal/etcdserver"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// EpochFigures are the times from the publish of a new epoch in etcd to
// every process of the layer reporting it (its status under its lease).
type EpochFigures struct {
	// Processes is how many processes had to report each epoch.
	Processes int
	// Times are the measured times, one per epoch, sorted.
	Times []time.Duration
}

// P50 and Max of the times.
func (e EpochFigures) P50() time.Duration { return e.Times[len(e.Times)/2] }
func (e EpochFigures) Max() time.Duration { return e.Times[len(e.Times)-1] }

// publishFirst sets up the layout store as Config.LayoutStore says and
// publishes l as the first layout.
func (s *sharded) publishFirst(ctx context.Context, l keyspace.Layout) error {
	useEtcd := s.c.LayoutStore == "etcd"
	if s.c.LayoutStore == "" {
		_, err := etcdserver.Binary()
		useEtcd = err == nil
	}
	if !useEtcd {
		return keyspace.Save(s.layout, l)
	}
	srv, err := etcdserver.Start(ctx, filepath.Join(s.dir, "etcd"), 1)
	if err != nil {
		return fmt.Errorf("layout store: %w", err)
	}
	s.etcdSrv = srv
	s.layout = "etcd://" + srv.Endpoints() + "/indexkit-scale/"
	st, closer, err := etcdlayout.Dial(s.layout)
	if err != nil {
		return err
	}
	s.etcd, s.closeE = st, closer
	s.log.Info("layout on etcd", "layout", s.layout, "etcd_pids", srv.PIDs())
	_, err = st.Publish(ctx, 0, l)
	return err
}

// load reads the layout in force.
func (s *sharded) load(ctx context.Context) (keyspace.Layout, error) {
	if s.etcd == nil {
		return keyspace.Load(s.layout)
	}
	l, _, err := s.etcd.Load(ctx)
	return l, err
}

func (s *sharded) stopEtcd() {
	if s.closeE != nil {
		s.closeE.Close()
		s.closeE = nil
	}
	if s.etcdSrv != nil {
		s.etcdSrv.Stop()
		s.etcdSrv = nil
	}
}

// epochs publishes Config.Epochs new epochs of the layout in force (the
// same rings, the epoch moved on: what every process must load before a
// coordinator may go on) and times each from its publish to every one of
// procs reporting it in etcd.
func (s *sharded) epochs(ctx context.Context, procs []*node) (*EpochFigures, error) {
	n := s.c.Epochs
	if n == 0 {
		n = 20
	}
	f := &EpochFigures{Processes: len(procs)}
	for range n {
		l, rev, err := s.etcd.Load(ctx)
		if err != nil {
			return nil, err
		}
		l.Epoch++
		start := time.Now()
		if _, err := s.etcd.Publish(ctx, rev, l); err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = s.etcd.Await(wctx, func(sts []keyspace.Status) bool {
			at := 0
			for _, st := range sts {
				if st.Epoch >= l.Epoch {
					at++
				}
			}
			return at >= len(procs)
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("epoch %d did not reach the %d processes in 30 s: %w", l.Epoch, len(procs), err)
		}
		f.Times = append(f.Times, time.Since(start))
	}
	slices.Sort(f.Times)
	s.log.Info("epoch propagation on etcd", "epochs", n, "processes", len(procs), "p50", f.P50().Round(time.Millisecond), "max", f.Max().Round(time.Millisecond))
	return f, nil
}
