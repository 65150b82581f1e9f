package etcdlayout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// CoordinateConfig configures [Store.Coordinate].
type CoordinateConfig struct {
	// ID names this coordinator in the election. Required.
	ID string
	// TTL is the term's lease TTL (0: [DefaultTTL]; whole seconds): how
	// long after a coordinator dies another one takes over.
	TTL time.Duration
	// Coordinator configures the coordinator that drives the change once
	// elected; Coordinate sets its Store (the term's [FencedStore]) and
	// Reports (the store's liveness keys), so Ingest and Fronts are not
	// needed.
	Coordinator keyspace.CoordinatorConfig
	// OnElected, when set, is called once the term is won.
	OnElected func()
}

// Coordinate waits to be elected coordinator of the store's layer, then
// takes it to goal with a [keyspace.Coordinator] and resigns. The
// coordinator resumes whatever change the layout records (the zero Goal
// only finishes it), so a standby that wins after the elected one died
// finishes that one's change. Coordinate returns nil when the goal is
// done, ctx.Err() when ctx ends, and an error wrapping [ErrNotLeader]
// when the term ends before (the lease lost: another coordinator takes
// over).
func (s *Store) Coordinate(ctx context.Context, cfg CoordinateConfig, goal keyspace.Goal) error {
	if cfg.ID == "" {
		return errors.New("etcdlayout: CoordinateConfig.ID is required")
	}
	lead, err := s.Campaign(ctx, cfg.ID, cfg.TTL)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		lead.Resign(rctx)
	}()
	if cfg.OnElected != nil {
		cfg.OnElected()
	}
	cc := cfg.Coordinator
	cc.Store, cc.Reports = lead.Store(), s
	co, err := keyspace.NewCoordinator(cc)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lead.Done():
			cancel()
		case <-tctx.Done():
		}
	}()
	err = co.Drive(tctx, goal)
	select {
	case <-lead.Done():
		if ctx.Err() == nil {
			return fmt.Errorf("%w: the term of %s ended: %v", ErrNotLeader, cfg.ID, err)
		}
	default:
	}
	return err
}
