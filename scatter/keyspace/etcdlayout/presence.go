package etcdlayout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// PresenceConfig configures [Store.Join].
type PresenceConfig struct {
	// Role and Name place the process's key at live/<Role>/<Name>: Role
	// one of keyspace.RoleQuery, RoleIngest or RoleFront, Name the
	// process's name in the layout (any unique name for a front end).
	// Required.
	Role, Name string
	// Status returns the process's status; Join writes it, and again
	// whenever it changes. Required.
	Status func() keyspace.Status
	// TTL is the lease's time to live (0: [DefaultTTL]; whole seconds).
	// A process that dies drops out of the coordinator's view TTL after
	// its last renewal.
	TTL time.Duration
	// Interval is the least time between two writes of a status whose
	// milestones did not change (0: [DefaultInterval]): progress (keys
	// copied, outbox positions) is written at most that often, and
	// Status is read every Interval/5. A milestone, what a coordinator
	// waits for (the epoch, readiness, a copy's or drop's end, the
	// oldest epoch an outbox still holds), is written as soon as Status
	// shows it: at the next read, at once when the store's Watch applies
	// a layout, or when [Presence.Kick] says so. The lease is renewed
	// every TTL/3.
	Interval time.Duration
	// Logger receives a line when the lease is lost and regained (nil:
	// discard).
	Logger *slog.Logger
}

// DefaultTTL is a presence's lease TTL unless set.
const DefaultTTL = 5 * time.Second

// DefaultInterval is a presence's Interval unless set. Writing progress
// often costs the processes CPU: in 10M sharded ingests (examples/scale
// -sharded 4), one run each, the layer ran at 129-149k mh/CPU-s with
// progress written every 100 ms and the status read every 20 ms, and at
// 147-165k with every second, against 161k on a layout file. A new epoch
// or another milestone does not wait for it (see Interval).
const DefaultInterval = time.Second

// Presence keeps a process's status under a lease key for as long as the
// process runs: the coordinator sees who is alive, and at which epoch,
// from these keys alone. Create it with [Store.Join].
//
// A presence knows how long its key is sure to exist: until TTL after the
// moment it sent its last renewal that etcd confirmed (etcd expires a
// lease no sooner than TTL after it received the renewal). Past that
// moment the process may have dropped out of the coordinator's view, and
// a coordinator that no longer waits for it may publish two epochs ahead:
// [Presence.Fenced] then reports true, and a process that must never act
// more than one epoch apart (a front end) stops answering as complete
// until it is back at the current epoch.
type Presence struct {
	s   *Store
	cfg PresenceConfig
	key string
	log *slog.Logger

	mu         sync.Mutex
	validUntil time.Time
	lease      int64
	last       []byte

	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // Kick: read the status now
}

// Join writes the process's status under a lease and keeps it there,
// renewed and up to date, until Close or ctx ends. It returns once the
// first status is written.
func (s *Store) Join(ctx context.Context, cfg PresenceConfig) (*Presence, error) {
	switch {
	case cfg.Role == "" || cfg.Name == "":
		return nil, errors.New("etcdlayout: PresenceConfig needs Role and Name")
	case cfg.Status == nil:
		return nil, errors.New("etcdlayout: PresenceConfig.Status is required")
	case cfg.TTL < 0 || cfg.TTL%time.Second != 0:
		return nil, fmt.Errorf("etcdlayout: PresenceConfig.TTL %v must be whole seconds (etcd lease TTLs are)", cfg.TTL)
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Presence{s: s, cfg: cfg, key: s.prefix + KeyLive + cfg.Role + "/" + cfg.Name, log: log, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	if err := p.grant(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.run(rctx)
	s.pmu.Lock()
	s.presences[p] = struct{}{}
	s.pmu.Unlock()
	return p, nil
}

// Kick has the presence read the status now and write it at once if a
// milestone changed (see [PresenceConfig].Interval). The store's Watch
// kicks every presence of the store after each layout it applies; a
// program that applies layouts by other means kicks after each, and one
// whose copy or drop ends kicks then (querynode.Config.OnTaskEnd).
func (p *Presence) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// grant takes a new lease and writes the status under it.
func (p *Presence) grant(ctx context.Context) error {
	sent := time.Now()
	id, ttl, err := p.s.cli.Grant(ctx, int64(p.cfg.TTL/time.Second))
	if err != nil {
		return fmt.Errorf("etcdlayout: grant the lease of %s: %w", p.key, err)
	}
	b := p.encode()
	if _, err := p.s.cli.Put(ctx, p.key, string(b), id); err != nil {
		return fmt.Errorf("etcdlayout: write %s: %w", p.key, err)
	}
	p.mu.Lock()
	p.lease, p.last, p.validUntil = id, b, sent.Add(time.Duration(ttl)*time.Second)
	p.mu.Unlock()
	return nil
}

func (p *Presence) encode() []byte { return p.encodeStatus(p.cfg.Status()) }

func (p *Presence) encodeStatus(st keyspace.Status) []byte {
	st.Role, st.Name = p.cfg.Role, p.cfg.Name
	b, _ := json.Marshal(st)
	return b
}

func (p *Presence) run(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(max(p.cfg.Interval/5, time.Millisecond))
	lastPut := time.Now() // Join's grant wrote the first status
	lastMark := milestones(p.cfg.Status())
	defer tick.Stop()
	renewEvery := p.cfg.TTL / 3
	lastRenew := time.Now()
	lost := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-p.kick:
		}
		p.mu.Lock()
		id := p.lease
		p.mu.Unlock()
		if lost {
			if err := p.grant(ctx); err != nil {
				continue
			}
			p.log.Info("presence regained", "key", p.key)
			lost, lastRenew = false, time.Now()
			continue
		}
		if time.Since(lastRenew) >= renewEvery {
			sent := time.Now()
			rctx, cancel := context.WithTimeout(ctx, renewEvery)
			ttl, err := p.s.cli.KeepAliveOnce(rctx, id)
			cancel()
			switch {
			case err == nil:
				lastRenew = sent
				p.mu.Lock()
				p.validUntil = sent.Add(time.Duration(ttl) * time.Second)
				p.mu.Unlock()
			case isLeaseGone(err): // answered: the lease is gone
				p.log.Warn("presence lost its lease; taking a new one", "key", p.key)
				lost = true
				continue
			default:
				if time.Now().After(p.until()) {
					lost = true // the key may be gone: start over with a new lease
				}
				continue
			}
		}
		st := p.cfg.Status()
		mark := milestones(st)
		if mark == lastMark && time.Since(lastPut) < p.cfg.Interval {
			continue // progress only: written at most every Interval
		}
		b := p.encodeStatus(st)
		p.mu.Lock()
		same := bytes.Equal(b, p.last)
		p.mu.Unlock()
		if same {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, renewEvery)
		_, err := p.s.cli.Put(pctx, p.key, string(b), id)
		cancel()
		if err == nil {
			lastPut, lastMark = time.Now(), mark
			p.mu.Lock()
			p.last = b
			p.mu.Unlock()
		} else if isLeaseGone(err) {
			lost = true
		}
	}
}

// milestones is what of st a coordinator waits for (keyspace's plan):
// the epoch, readiness, the state of the copy and the drop, and the
// oldest epoch each outbox still holds a batch of. Two statuses with the
// same milestones differ only in progress.
func milestones(st keyspace.Status) string {
	b := fmt.Appendf(nil, "%d %t", st.Epoch, st.Ready)
	for _, t := range []*keyspace.Task{st.Copy, st.Drop} {
		if t == nil {
			b = append(b, " -"...)
			continue
		}
		b = fmt.Appendf(b, " %d/%t/%t", t.Epoch, t.Done, t.Error != "")
	}
	owners := make([]string, 0, len(st.Owners))
	for n := range st.Owners {
		owners = append(owners, n)
	}
	slices.Sort(owners)
	for _, n := range owners {
		if o := st.Owners[n]; o.Pending > 0 {
			b = fmt.Appendf(b, " %s:%d", n, o.OldestEpoch)
		}
	}
	return string(b)
}

func isLeaseGone(err error) bool { return errors.Is(err, etcdjson.ErrLeaseNotFound) }

func (p *Presence) until() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.validUntil
}

// Fenced reports whether the process's key may have expired: no renewal
// etcd confirmed within the last TTL. See [Presence].
func (p *Presence) Fenced() bool { return time.Now().After(p.until()) }

// Close stops the renewals and revokes the lease, so the key goes at
// once rather than TTL later. It is idempotent.
func (p *Presence) Close() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	<-p.done
	p.s.pmu.Lock()
	delete(p.s.presences, p)
	p.s.pmu.Unlock()
	p.mu.Lock()
	id := p.lease
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := p.s.cli.Revoke(ctx, id)
	if err != nil && !isLeaseGone(err) {
		return fmt.Errorf("etcdlayout: revoke the lease of %s: %w", p.key, err)
	}
	return nil
}
