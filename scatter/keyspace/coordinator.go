package keyspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/internal/httperr"
)

// CoordinatorConfig configures a [Coordinator].
type CoordinatorConfig struct {
	// Store is the source of the epoch: the coordinator reads the layout
	// in force from it and publishes each next epoch into it, over the
	// revision it read. Nil: a [FileStore] at LayoutPath.
	Store LayoutStore
	// LayoutPath is the layout file, when Store is nil.
	LayoutPath string
	// Reports, when set, gives the processes' statuses (the etcd store's
	// liveness keys, say); Ingest and Fronts are then not used. Nil: the
	// coordinator asks each process at [PathStatus]: the query nodes at
	// their layout URLs, the writers and front ends at the URLs below.
	Reports StatusSource
	// Ingest maps each writer's name to the base URL where it serves
	// [PathStatus].
	Ingest map[string]string
	// Fronts are the base URLs of the front ends' [PathStatus].
	Fronts []string
	// Token is the query nodes' bearer token, for copies and drops.
	Token string
	// Client makes the requests (nil: one with a 10 s timeout).
	Client *http.Client
	// Reload, when set, is called after each new epoch is published, to
	// make the processes load it (sending them SIGHUP, say). Without it
	// they must notice it by themselves (polling the file, or watching
	// etcd).
	Reload func(ctx context.Context, l Layout) error
	// Poll is the interval between observations (0: 200 ms); with
	// Reports, a change it signals starts the next one at once.
	Poll time.Duration
	// Logger receives one line per action and, every ten seconds, what
	// a wait is for (nil: discard).
	Logger *slog.Logger
	// OnAction, when set, is called with each action before it is taken.
	OnAction func(Action)
}

// Coordinator drives membership changes of the query layer: it observes
// every process's status, decides with [NextAction] and acts: it publishes
// the next epoch to the layout store (a compare-and-swap over the revision
// it observed: a publish that loses a race to another coordinator is
// dropped and the coordinator observes again), asks nodes to copy or drop
// ranges, and waits. It holds no state of its own beyond the layout, so a
// coordinator that stops mid-change and starts again, or another one
// that takes over, picks the change up where the layout and the processes
// stand.
type Coordinator struct {
	cfg CoordinatorConfig
	log *slog.Logger
}

// NewCoordinator checks cfg and returns a Coordinator. It starts nothing.
func NewCoordinator(cfg CoordinatorConfig) (*Coordinator, error) {
	if cfg.Store == nil {
		if cfg.LayoutPath == "" {
			return nil, fmt.Errorf("%w: coordinator without a layout store or file", ErrInvalidLayout)
		}
		cfg.Store = &FileStore{Path: cfg.LayoutPath}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Coordinator{cfg: cfg, log: log}, nil
}

// Drive takes the layer to goal and returns when [NextAction] says it is
// done (the old owners have dropped the moved ranges), or when ctx ends.
func (c *Coordinator) Drive(ctx context.Context, goal Goal) error {
	lastWhy, lastLog := "", time.Time{}
	for {
		// Ask for the next change before observing, so that one that
		// comes meanwhile wakes the wait below.
		var changed <-chan struct{}
		if c.cfg.Reports != nil {
			changed = c.cfg.Reports.Changed()
		}
		obs, err := c.Observe(ctx)
		if err != nil {
			return err
		}
		a := NextAction(obs, goal)
		if a.Kind != ActWait && c.cfg.OnAction != nil {
			c.cfg.OnAction(a)
		}
		switch a.Kind {
		case ActDone:
			c.log.Info("change done", "goal", goal.String(), "epoch", obs.Layout.Epoch)
			return nil
		case ActPublish:
			if _, err := c.cfg.Store.Publish(ctx, obs.Revision, a.Layout); err != nil {
				if errors.Is(err, ErrConflict) {
					// Another coordinator published: observe again.
					c.log.Warn("publish lost a race; observing again", "epoch", a.Layout.Epoch, "err", err)
					continue
				}
				return err
			}
			c.log.Info("published", "epoch", a.Layout.Epoch, "phase", a.Layout.Phase, "why", a.Why)
			if c.cfg.Reload != nil {
				if err := c.cfg.Reload(ctx, a.Layout); err != nil {
					return fmt.Errorf("shard: reload epoch %d: %w", a.Layout.Epoch, err)
				}
			}
			continue
		case ActCopy, ActDrop:
			path := PathCopy
			if a.Kind == ActDrop {
				path = PathDrop
			}
			for _, n := range a.Nodes {
				if err := c.post(ctx, strings.TrimSuffix(obs.Layout.URL(n), "/")+path, obs.Layout.Epoch); err != nil {
					c.log.Warn("request failed", "indexer", n, "action", a.Kind.String(), "err", err)
				}
			}
			c.log.Info(a.Kind.String(), "epoch", obs.Layout.Epoch, "nodes", a.Nodes)
		case ActWait:
			if a.Why != lastWhy || time.Since(lastLog) > 10*time.Second {
				c.log.Info("waiting", "why", a.Why)
				lastWhy, lastLog = a.Why, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(c.cfg.Poll):
		}
	}
}

// Observe reads the layout in force and the status of every process: from
// Reports when set, else by asking each process, concurrently. A process
// that does not answer (or whose report expired) is missing from the
// observation.
func (c *Coordinator) Observe(ctx context.Context) (Observation, error) {
	l, rev, err := c.cfg.Store.Load(ctx)
	if err != nil {
		return Observation{}, err
	}
	obs := Observation{Layout: l, Revision: rev, Query: map[string]Status{}, Ingest: map[string]Status{}, Front: map[string]Status{}, Fronts: len(c.cfg.Fronts)}
	if c.cfg.Reports != nil {
		sts, err := c.cfg.Reports.Statuses(ctx)
		if err != nil {
			return Observation{}, err
		}
		obs.Fronts = 0
		for _, st := range sts {
			switch st.Role {
			case RoleQuery:
				obs.Query[st.Name] = st
			case RoleIngest:
				obs.Ingest[st.Name] = st
			case RoleFront:
				obs.Front[st.Name] = st
				obs.Fronts++
			}
		}
		return obs, nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ask := func(m map[string]Status, key, base string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.status(ctx, base)
			if err != nil {
				return
			}
			mu.Lock()
			m[key] = st
			mu.Unlock()
		}()
	}
	for _, n := range l.Nodes {
		ask(obs.Query, n.Name, n.URL)
	}
	for _, w := range l.Writers {
		if u, ok := c.cfg.Ingest[w]; ok {
			ask(obs.Ingest, w, u)
		}
	}
	for _, u := range c.cfg.Fronts {
		ask(obs.Front, u, u)
	}
	wg.Wait()
	return obs, nil
}

func (c *Coordinator) status(ctx context.Context, base string) (Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+PathStatus, nil)
	if err != nil {
		return Status{}, err
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return Status{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("%s: %s", base, resp.Status)
	}
	var st Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return Status{}, fmt.Errorf("%s: status: %w", base, err)
	}
	return st, nil
}

func (c *Coordinator) post(ctx context.Context, u string, epoch uint64) error {
	body, _ := json.Marshal(struct{ Epoch uint64 }{epoch})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4*httperr.SnippetLen))
		return fmt.Errorf("%s: %s: %s", u, resp.Status, httperr.Snippet(msg))
	}
	return nil
}
