package querynode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/internal/localonly"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// Config configures a [Node].
type Config struct {
	// Name is this node's name in layouts. Required.
	Name string
	// Dir holds the node's small durable state: per-writer positions and
	// the copy guard. Required; created if missing.
	Dir string
	// Store is the index. Required; the node does not close it.
	Store store.Store
	// Token is the bearer token of the batch, export, copy and drop
	// requests. "": none, and then those requests are answered only when
	// their Host is 127.0.0.0/8, [::1], localhost or one of AllowedHosts
	// (421 otherwise: a DNS-rebound web page) and no web page sent them
	// (403 for an Origin header or a Sec-Fetch-Site other than "none").
	Token string
	// AllowedHosts are the Host names, besides loopback ones, that a node
	// without a Token answers writes to: host names or IP addresses
	// without a port, for a node the layout names by a name of its own.
	// Ignored with a Token.
	AllowedHosts []string
	// Client pulls exports from other query nodes (nil: one with connect
	// and header timeouts and no overall timeout, since an export
	// streams for as long as it has keys).
	Client *http.Client
	// Logger receives the node's log lines (nil: discarded).
	Logger *slog.Logger
	// MaxBatchBytes bounds a batch body (0: [DefaultMaxBatchBytes]).
	MaxBatchBytes int64
	// CommitInterval, when positive, commits in groups: a batch is
	// applied at once and answered as applied, and made durable (the
	// store flushed, the writers' positions saved) at most this long
	// after, or as soon as CommitBytes of batches wait, by [Node.Run].
	// A flush per batch costs the store dearly (Pebble's sorted runs are
	// committed through its memtable when small); a writer keeps a batch
	// until it is durable, so a node killed before a commit gets the
	// batches since its last one again. 0: every batch is made durable
	// before it is answered.
	CommitInterval time.Duration
	// CommitBytes is the size of the batches that waiting for a commit
	// starts one at once (0: 16 MiB).
	CommitBytes int64
	// CopyKeyByKey makes a copy apply what it pulls op by op through the
	// store's Put even when the store is a [store.BulkLoader], whose
	// sorted tables are otherwise how a copy loads (see "Copying by
	// tables" in the package documentation). For comparison, and for a
	// store whose bulk path is not wanted.
	CopyKeyByKey bool
	// CopyTableKeys is the most (multihash, value) entries a copy gathers
	// from one source before it seals them into a table (0:
	// [DefaultCopyTableKeys]). A copy pulls up to four sources at once,
	// each with a table gathering and one building, at about 200 bytes of
	// memory per entry.
	CopyTableKeys int
	// OnTaskEnd, if set, is called when a copy or a drop ends (done or
	// failed), once Status shows the end, on the task's goroutine. A
	// process that publishes its status has it published at once
	// (etcdlayout.Presence.Kick): a coordinator waits for these ends.
	OnTaskEnd func()
}

// DefaultCopyTableKeys is the entries a copy gathers per table by
// default: tables of a few MiB, which Pebble takes in milliseconds, and
// about 100 MiB of memory for four sources pulled at once.
const DefaultCopyTableKeys = 64 << 10

// DefaultMaxBatchBytes is the largest batch body a node reads by default.
const DefaultMaxBatchBytes = 64 << 20

// Node is a query node of the keyspace-sharded layer; see the package
// documentation.
type Node struct {
	cfg   Config
	log   *slog.Logger
	auth  []byte
	local *localonly.Guard // nil with a token

	// applyMu is held shared by each batch while it applies and
	// exclusively by SetLayout while it swaps the layout and the copy
	// guard, so that no batch straddles a change of guard.
	applyMu sync.RWMutex
	// member is the last layout adopted, as memberFile holds it
	// (memberKnown: there is one); only adopt reads and writes them, with
	// applyMu held exclusively (or in New).
	member      membership
	memberKnown bool

	mu       sync.Mutex
	layout   keyspace.Layout
	place    *keyspace.Placement
	self     int // index of cfg.Name in layout.Nodes, or -1
	guard    *guard
	writers  map[string]*writer
	ready    bool
	copyTask *task
	dropTask *task
	wake     chan struct{} // a task was started (cap 1)
	running  bool
	closed   bool
	done     chan struct{} // closed by Close
	closing  context.Context
	shut     context.CancelFunc // cancels closing: requests in flight stop
	inflight sync.WaitGroup

	// Spools of a source's exports in a leave (spool.go); scans counts
	// the scans of the store exports made, for tests.
	spoolMu     sync.Mutex
	spools      map[string]*spool
	spoolEpoch  uint64
	spoolClosed bool
	spoolWG     sync.WaitGroup
	scans       atomic.Int64

	// copyHook, set by tests, is called after each export frame a copy
	// has taken in.
	copyHook func(source string, frame int)

	commitMu  sync.Mutex    // one commit at a time
	pending   atomic.Int64  // bytes of batches applied since the last commit
	commitNow chan struct{} // cap 1: CommitBytes wait
}

// writer is the node's position with one ingest node.
type writer struct {
	mu  sync.Mutex // serialises the writer's batches
	pos keyspace.WriterPosition
	// applied is pos.Applied once its ops are in the store, for a commit
	// to read without the writer's lock; durable is the last Seq a
	// commit has flushed and saved.
	applied, durable atomic.Uint64
	// smu guards stream, the stream the durable position belongs to:
	// a commit saves a position only for the stream it read it under.
	smu    sync.Mutex
	stream uint64
	view   keyspace.WriterPosition // pos as Status shows it; guarded by Node.mu
	heard  bool                    // a drained message at its position arrived since start; guarded by Node.mu
}

// New returns a node acting on layout l, with the positions and copy guard
// kept in cfg.Dir. It starts nothing: serve [Node.Handler] and run
// [Node.Run].
func New(cfg Config, l keyspace.Layout) (*Node, error) {
	switch {
	case cfg.Name == "":
		return nil, fmt.Errorf("%w: empty name", ErrInvalidConfig)
	case cfg.Dir == "":
		return nil, fmt.Errorf("%w: empty directory", ErrInvalidConfig)
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: nil store", ErrInvalidConfig)
	case cfg.MaxBatchBytes < 0:
		return nil, fmt.Errorf("%w: max batch bytes %d", ErrInvalidConfig, cfg.MaxBatchBytes)
	case cfg.CopyTableKeys < 0:
		return nil, fmt.Errorf("%w: copy table keys %d", ErrInvalidConfig, cfg.CopyTableKeys)
	}
	if cfg.CopyTableKeys == 0 {
		cfg.CopyTableKeys = DefaultCopyTableKeys
	}
	if cfg.CommitBytes <= 0 {
		cfg.CommitBytes = 16 << 20
	}
	if cfg.MaxBatchBytes == 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil {
		cfg.Client = defaultClient()
	}
	local, err := localonly.New("the query node's write API", "allow it with -shard-hosts (Config.AllowedHosts) or set a token", cfg.AllowedHosts...)
	if err != nil {
		return nil, fmt.Errorf("%w: allowed hosts: %w", ErrInvalidConfig, err)
	}
	place, err := keyspace.NewPlacement(l)
	if err != nil {
		return nil, fmt.Errorf("%w: layout: %w", ErrInvalidConfig, err)
	}
	pos, err := loadWriters(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if err := removeSpools(cfg.Dir); err != nil {
		return nil, err
	}
	member, memberKnown, err := loadMembership(cfg.Dir)
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:       cfg,
		log:       cfg.Logger.With("node", cfg.Name),
		writers:   make(map[string]*writer, len(pos)),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		commitNow: make(chan struct{}, 1),
		member:    member, memberKnown: memberKnown,
	}
	n.closing, n.shut = context.WithCancel(context.Background())
	if cfg.Token != "" {
		n.auth = []byte("Bearer " + cfg.Token)
	} else {
		n.local = local
	}
	for name, p := range pos {
		w := &writer{pos: p, view: p, stream: p.Stream}
		w.applied.Store(p.Applied)
		w.durable.Store(p.Applied)
		n.writers[name] = w
	}
	if err := n.adopt(l.Clone(), place); err != nil {
		return nil, err
	}
	return n, nil
}

func defaultClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
	}}
}

// gainsKeys reports whether the node may gain keys in layout l: it is on
// Next of a PhaseCopy layout and either new or left by another node.
func gainsKeys(l *keyspace.Layout, name string) bool {
	if l.Phase != keyspace.PhaseCopy || !slices.Contains(l.Next, name) {
		return false
	}
	if !slices.Contains(l.Current, name) {
		return true
	}
	for _, c := range l.Current {
		if !slices.Contains(l.Next, c) {
			return true
		}
	}
	return false
}

// adopt installs l; the caller holds applyMu exclusively (or is New). A
// layout that brings the node back after it left empties its store
// first (see rejoins and cleanSlate).
func (n *Node) adopt(l keyspace.Layout, place *keyspace.Placement) error {
	m := membership{Epoch: l.Epoch, Named: place.Node(n.cfg.Name) >= 0}
	if rejoins(n.member, n.memberKnown, &l, n.cfg.Name) {
		n.log.Warn("named by the layout again after it left: emptying the store, which no writer wrote to since",
			"epoch", l.Epoch, "last_epoch", n.member.Epoch, "was_named", n.member.Named)
		keys, err := n.cleanSlate(n.closing)
		if err != nil {
			return err
		}
		n.log.Info("store emptied for the rejoin", "epoch", l.Epoch, "keys", keys)
	}
	if m != n.member || !n.memberKnown {
		if err := saveMembership(n.cfg.Dir, m); err != nil {
			return err
		}
		n.member, n.memberKnown = m, true
	}
	var g *guard
	if gainsKeys(&l, n.cfg.Name) {
		n.mu.Lock()
		old := n.guard
		n.mu.Unlock()
		if old != nil && old.epoch == l.Epoch {
			g = old
		} else {
			var err error
			if g, err = openGuard(n.cfg.Dir, l.Epoch); err != nil {
				return err
			}
		}
	} else if err := removeGuards(n.cfg.Dir, 0); err != nil {
		return err
	}
	n.spoolMu.Lock()
	n.dropSpoolsLocked(l.Epoch)
	n.spoolMu.Unlock()
	n.mu.Lock()
	old := n.guard
	n.layout, n.place, n.guard = l, place, g
	n.self = place.Node(n.cfg.Name)
	for _, t := range []*task{n.copyTask, n.dropTask} {
		if t != nil && t.epoch() != l.Epoch {
			t.cancel() // it acts on a layout no longer in force
		}
	}
	n.mu.Unlock()
	if old != nil && old != g {
		old.close(false) // its file is gone or belongs to no epoch
	}
	return nil
}

// SetLayout makes the node act on l. A layout of the node's epoch changes
// nothing; an older one is refused with an error wrapping
// [keyspace.ErrStaleEpoch]. A newer one is adopted: a PhaseCopy layout in
// which the node gains keys starts the copy guard (kept until the layout
// leaves PhaseCopy), and a copy of an older epoch still running is
// stopped.
func (n *Node) SetLayout(l keyspace.Layout) error {
	n.mu.Lock()
	cur, closed := n.layout.Epoch, n.closed
	n.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case l.Epoch == cur:
		return nil
	case l.Epoch < cur:
		return fmt.Errorf("querynode: layout of epoch %d: %w: the node acts on epoch %d", l.Epoch, keyspace.ErrStaleEpoch, cur)
	}
	place, err := keyspace.NewPlacement(l)
	if err != nil {
		return fmt.Errorf("querynode: set layout: %w", err)
	}
	n.applyMu.Lock()
	defer n.applyMu.Unlock()
	n.mu.Lock()
	cur = n.layout.Epoch
	n.mu.Unlock()
	if l.Epoch <= cur { // a concurrent SetLayout won
		if l.Epoch == cur {
			return nil
		}
		return fmt.Errorf("querynode: layout of epoch %d: %w: the node acts on epoch %d", l.Epoch, keyspace.ErrStaleEpoch, cur)
	}
	if err := n.adopt(l.Clone(), place); err != nil {
		return err
	}
	n.log.Info("layout adopted", "epoch", l.Epoch, "phase", l.Phase)
	return nil
}

// Layout returns the layout the node acts on.
func (n *Node) Layout() keyspace.Layout {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.layout.Clone()
}

// Ready reports whether the node answers finds: since it started, every
// writer of its layout has told it that nothing older waits for it (a
// drained message at the position the node has applied). Once ready, a
// node stays ready: a writer added to a later layout has nothing of the
// node's past to deliver. A node named again after it left empties its
// store and waits to hear from every writer again (see the package
// documentation).
func (n *Node) Ready() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.readyLocked()
}

func (n *Node) readyLocked() bool {
	if n.ready {
		return true
	}
	for _, w := range n.layout.Writers {
		if ws := n.writers[w]; ws == nil || !ws.heard {
			return false
		}
	}
	n.ready = true
	return true
}

// waiting lists the writers not heard from yet.
func (n *Node) waiting() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, w := range n.layout.Writers {
		if ws := n.writers[w]; ws == nil || !ws.heard {
			out = append(out, w)
		}
	}
	return out
}

// Status reports the node's epoch, readiness, writer positions and last
// copy and drop.
func (n *Node) Status() keyspace.Status {
	n.mu.Lock()
	st := keyspace.Status{
		Role:    keyspace.RoleQuery,
		Name:    n.cfg.Name,
		Epoch:   n.layout.Epoch,
		Ready:   n.readyLocked(),
		Writers: make(map[string]keyspace.WriterPosition, len(n.writers)),
	}
	for k, w := range n.writers {
		st.Writers[k] = w.view
	}
	ct, dt := n.copyTask, n.dropTask
	n.mu.Unlock()
	if ct != nil {
		t := ct.snapshot()
		st.Copy = &t
	}
	if dt != nil {
		t := dt.snapshot()
		st.Drop = &t
	}
	return st
}

// GateFind returns a handler answering 503 (with Retry-After) while the
// node is not [Node.Ready], and h once it is.
func (n *Node) GateFind(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !n.Ready() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "querynode: catching up: waiting to hear from writers "+strings.Join(n.waiting(), ", "), http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Close stops the node: new requests are refused with 503, running tasks
// are stopped, and Close waits for the requests in flight. It does not
// close the store. It is safe to call more than once.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	close(n.done)
	n.shut()
	for _, t := range []*task{n.copyTask, n.dropTask} {
		if t != nil {
			t.cancel()
		}
	}
	n.mu.Unlock()
	n.inflight.Wait()
	n.closeSpools()
	cerr := n.commit(context.Background())
	n.applyMu.Lock()
	defer n.applyMu.Unlock()
	n.mu.Lock()
	g := n.guard
	n.guard = nil
	n.mu.Unlock()
	if g != nil {
		return errors.Join(cerr, g.close(false))
	}
	return cerr
}

// commit makes every batch applied so far durable: it reads each writer's
// applied position, flushes the store (everything up to those positions
// is in it), then saves the positions that moved. Commits run one at a
// time.
func (n *Node) commit(ctx context.Context) error {
	n.commitMu.Lock()
	defer n.commitMu.Unlock()
	n.mu.Lock()
	type move struct {
		name        string
		w           *writer
		stream, seq uint64
	}
	var moves []move
	for name, w := range n.writers {
		w.smu.Lock()
		stream := w.stream
		a := w.applied.Load()
		w.smu.Unlock()
		if a > w.durable.Load() {
			moves = append(moves, move{name, w, stream, a})
		}
	}
	n.mu.Unlock()
	n.pending.Store(0)
	if len(moves) == 0 {
		return nil
	}
	if err := n.cfg.Store.Flush(ctx); err != nil {
		return fmt.Errorf("querynode: commit: flush: %w", err)
	}
	for _, m := range moves {
		if err := m.w.saveDurable(n.cfg.Dir, m.name, m.stream, m.seq); err != nil {
			return fmt.Errorf("querynode: commit: %w", err)
		}
	}
	return nil
}

// saveDurable saves seq as the durable position of stream, unless the
// writer's stream has been reset since.
func (w *writer) saveDurable(dir, name string, stream, seq uint64) error {
	w.smu.Lock()
	defer w.smu.Unlock()
	if w.stream != stream || seq <= w.durable.Load() {
		return nil
	}
	if err := saveWriter(dir, name, keyspace.WriterPosition{Stream: stream, Applied: seq}); err != nil {
		return err
	}
	w.durable.Store(seq)
	return nil
}

// committer commits every CommitInterval, and at once when a batch has
// found CommitBytes waiting, until ctx ends.
func (n *Node) committer(ctx context.Context) {
	t := time.NewTicker(n.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.commitNow:
		}
		if err := n.commit(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("commit failed; batches stay unacknowledged and will come again", "err", err)
		}
	}
}

// enter counts a request in flight; it fails once the node is closed.
func (n *Node) enter() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.inflight.Add(1)
	return true
}

// Run runs the copy and drop tasks started through the API until ctx is
// done or the node is closed, and returns after every goroutine it started
// has exited. Run may be called once at a time: another call returns
// [ErrRunTwice] while one runs.
func (n *Node) Run(ctx context.Context) error {
	n.mu.Lock()
	if n.running {
		n.mu.Unlock()
		return ErrRunTwice
	}
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.running = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.running = false
		n.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	if n.cfg.CommitInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.committer(ctx)
		}()
	}
	for {
		n.mu.Lock()
		for _, t := range []*task{n.copyTask, n.dropTask} {
			if t != nil && !t.started {
				t.started = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					t.run(ctx)
				}()
			}
		}
		n.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-n.done:
			return nil
		case <-n.wake:
		}
	}
}
