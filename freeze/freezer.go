package freeze

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// State is the frozen state of a node, as persisted in the [Store].
type State int

const (
	// Unfrozen: the node ingests normally.
	Unfrozen State = iota
	// Freezing: the freeze is recorded but the OnFreeze snapshot has not
	// completed yet. The node is frozen (Frozen reports true); the
	// snapshot is retried by Run and by the next Open.
	Freezing
	// Frozen: the freeze and its snapshot are complete.
	Frozen
	// Unfreezing: an unfreeze on start is recorded but OnUnfreeze has not
	// completed. The node stays frozen; the next Open completes the
	// unfreeze, with or without WithUnfreezeOnStart.
	Unfreezing
)

var stateNames = [...]string{"unfrozen", "freezing", "frozen", "unfreezing"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a snapshot of a [Freezer], for the admin API's GET /status and
// for metrics.
type Status struct {
	State    State
	Frozen   bool      // State is not Unfrozen
	FrozenAt time.Time // when the node froze; zero when unfrozen
	Usage    float64   // percent of the fullest filesystem at the last check; −1 before it or on error
	FreezeAt float64   // the limit in percent; −1 when freezing is disabled
}

// record is the persisted form of the state.
type record struct {
	State string    `json:"state"`
	At    time.Time `json:"at,omitzero"`
}

// Freezer holds a node's persisted frozen state and freezes the node when
// its [Monitor] reports usage at the limit. Make one with [Open]. Its
// methods are safe for concurrent use.
type Freezer struct {
	store Store
	mon   *Monitor
	cfg   freezerConfig
	log   *slog.Logger

	op sync.Mutex // serializes transitions, callbacks included

	mu    sync.Mutex
	state State
	at    time.Time
}

// Open loads the state from st and returns a Freezer that measures usage
// with mon. Call it once the stores the callbacks use are open and before
// ingestion starts, since it may run them:
//
//   - a freeze interrupted by a crash or a failure (state [Freezing]) is
//     completed: OnFreeze runs again with the original time. If it fails,
//     Open logs the error and returns the Freezer frozen; Run retries.
//   - an interrupted unfreeze ([Unfreezing]) is completed; if OnUnfreeze
//     fails, Open returns the error.
//   - with [WithUnfreezeOnStart], a frozen node is unfrozen when freezing
//     is disabled or usage, measured now, is below the limit; otherwise it
//     stays frozen and a WARN says why. An unfreeze whose OnUnfreeze fails
//     makes Open return the error.
//
// Open starts no goroutine.
func Open(ctx context.Context, st Store, mon *Monitor, opts ...Option) (*Freezer, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOption)
	}
	if mon == nil {
		return nil, fmt.Errorf("%w: nil monitor", ErrInvalidOption)
	}
	cfg, err := newFreezerConfig(opts)
	if err != nil {
		return nil, err
	}
	f := &Freezer{store: st, mon: mon, cfg: *cfg, log: mon.log}
	b, err := st.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("freeze: open: %w", err)
	}
	if f.state, f.at, err = decode(b); err != nil {
		return nil, err
	}
	f.op.Lock()
	defer f.op.Unlock()
	switch f.state {
	case Freezing:
		f.log.Warn("completing an interrupted freeze", "frozen_at", f.at)
		_ = f.completeFreeze(ctx) // logged; Run retries
	case Unfreezing:
		f.log.Warn("completing an interrupted unfreeze", "frozen_at", f.at)
		if err := f.completeUnfreeze(ctx); err != nil {
			return nil, err
		}
	}
	if f.state != Unfrozen {
		f.log.Info("indexer is frozen", "frozen_at", f.at, "state", f.state)
		if cfg.unfreezeOnStart {
			if err := f.unfreezeOnStart(ctx); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

func decode(b []byte) (State, time.Time, error) {
	if len(b) == 0 {
		return Unfrozen, time.Time{}, nil
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, time.Time{}, fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	for s, name := range stateNames {
		if r.State == name {
			if State(s) != Unfrozen && r.At.IsZero() {
				return 0, time.Time{}, fmt.Errorf("%w: %s without a time", ErrInvalidState, name)
			}
			return State(s), r.At, nil
		}
	}
	return 0, time.Time{}, fmt.Errorf("%w: unknown state %q", ErrInvalidState, r.State)
}

// save persists s and at, then makes them the current state.
func (f *Freezer) save(ctx context.Context, s State, at time.Time) error {
	b, err := json.Marshal(record{State: s.String(), At: at})
	if err != nil {
		return err
	}
	if err := f.store.Save(ctx, b); err != nil {
		return fmt.Errorf("freeze: persist %s state: %w", s, err)
	}
	f.mu.Lock()
	f.state, f.at = s, at
	f.mu.Unlock()
	if f.cfg.onStateChange != nil {
		f.cfg.onStateChange(s, at)
	}
	return nil
}

// State returns the current state.
func (f *Freezer) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Frozen reports whether the node is frozen: it must store no new
// multihashes. It is true from the moment a freeze is recorded, before
// OnFreeze runs, until an unfreeze completes.
func (f *Freezer) Frozen() bool { return f.State() != Unfrozen }

// FrozenAt returns when the node froze, or the zero time when it is not
// frozen.
func (f *Freezer) FrozenAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}

// Status returns the state with the usage of the last check.
func (f *Freezer) Status() Status {
	f.mu.Lock()
	s, at := f.state, f.at
	f.mu.Unlock()
	return Status{State: s, Frozen: s != Unfrozen, FrozenAt: at, Usage: f.mon.Usage(), FreezeAt: f.mon.FreezeAt()}
}

// Freeze freezes the node now (the admin API's PUT /freeze). It reports
// whether this call froze it: false with a nil error means the node was
// already frozen. True with an error means the freeze is recorded (Frozen
// reports true) but OnFreeze or the final save failed; Run retries them.
// When the node is already [Freezing], Freeze retries them itself. With
// freezing disabled it returns [ErrDisabled].
func (f *Freezer) Freeze(ctx context.Context) (bool, error) {
	if !f.mon.Enabled() {
		return false, ErrDisabled
	}
	return f.freeze(ctx, "manual", f.mon.Usage())
}

func (f *Freezer) freeze(ctx context.Context, reason string, usage float64) (bool, error) {
	f.op.Lock()
	defer f.op.Unlock()
	switch f.State() {
	case Freezing:
		return false, f.completeFreeze(ctx)
	case Frozen, Unfreezing:
		return false, nil
	}
	at := time.Now().UTC()
	if err := f.save(ctx, Freezing, at); err != nil {
		return false, err
	}
	f.log.Warn("indexer frozen", "reason", reason, "usage", round2(usage), "freeze_at", f.mon.FreezeAt(), "frozen_at", at)
	return true, f.completeFreeze(ctx)
}

// completeFreeze runs OnFreeze for the recorded freeze and records it
// complete. f.op is held.
func (f *Freezer) completeFreeze(ctx context.Context) error {
	at := f.FrozenAt()
	if f.cfg.onFreeze != nil {
		if err := f.cfg.onFreeze(ctx, at); err != nil {
			err = fmt.Errorf("freeze: snapshot: %w", err)
			f.log.Error("freeze snapshot failed; will retry", "err", err, "frozen_at", at)
			return err
		}
	}
	if err := f.save(ctx, Frozen, at); err != nil {
		f.log.Error("freeze not recorded complete; will retry", "err", err, "frozen_at", at)
		return err
	}
	return nil
}

// unfreezeOnStart unfreezes a frozen node when allowed. f.op is held.
func (f *Freezer) unfreezeOnStart(ctx context.Context) error {
	if f.state == Freezing {
		f.log.Warn("not unfreezing: the freeze snapshot has not completed", "frozen_at", f.at)
		return nil
	}
	if f.mon.Enabled() {
		usage, err := f.mon.Check(ctx)
		if err != nil {
			f.log.Warn("not unfreezing: disk usage unknown", "err", err)
			return nil
		}
		if usage >= f.mon.FreezeAt() {
			f.log.Warn("not unfreezing: disk usage at or above the freeze limit",
				"usage", round2(usage), "freeze_at", f.mon.FreezeAt())
			return nil
		}
	}
	if err := f.save(ctx, Unfreezing, f.at); err != nil {
		return err
	}
	return f.completeUnfreeze(ctx)
}

// completeUnfreeze runs OnUnfreeze and records the node unfrozen. f.op is
// held.
func (f *Freezer) completeUnfreeze(ctx context.Context) error {
	at := f.FrozenAt()
	if f.cfg.onUnfreeze != nil {
		if err := f.cfg.onUnfreeze(ctx, at); err != nil {
			return fmt.Errorf("freeze: unfreeze: %w", err)
		}
	}
	if err := f.save(ctx, Unfrozen, time.Time{}); err != nil {
		return err
	}
	f.log.Info("indexer unfrozen", "frozen_at", at)
	return nil
}

// Check measures the usage now and acts on it as Run does: it freezes the
// node at the limit and retries an incomplete freeze. It returns the usage
// and the first error (of the measure or of the freeze).
func (f *Freezer) Check(ctx context.Context) (float64, error) {
	usage, err := f.mon.check(ctx, f.Frozen())
	if ferr := f.act(ctx, usage, err); err == nil {
		err = ferr
	}
	return usage, err
}

// Run checks the usage on the [Monitor]'s schedule until ctx is done, then
// returns nil. It freezes the node when usage reaches the limit, and
// retries an incomplete freeze every retry interval. Once frozen it keeps
// measuring (for Usage and Status) every [DefaultFrozenInterval], with
// throttled logs. Only one Run of the Freezer or its Monitor may run at a
// time; another returns [ErrRunTwice].
func (f *Freezer) Run(ctx context.Context) error {
	return f.mon.run(ctx, f.Frozen, func(ctx context.Context, usage float64, err error) time.Duration {
		if ferr := f.act(ctx, usage, err); ferr != nil && err == nil {
			err = ferr
		}
		return f.mon.interval(usage, err, f.Frozen())
	})
}

// act follows a check: it completes a pending freeze, or freezes at the
// limit.
func (f *Freezer) act(ctx context.Context, usage float64, err error) error {
	switch f.State() {
	case Freezing:
		_, ferr := f.freeze(ctx, "", usage)
		return ferr
	case Unfrozen:
		if err == nil && f.mon.Enabled() && usage >= f.mon.FreezeAt() {
			_, ferr := f.freeze(ctx, "disk usage", usage)
			return ferr
		}
	}
	return nil
}
