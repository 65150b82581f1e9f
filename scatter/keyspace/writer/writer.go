package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/store"
)

// Config configures a [Writer].
type Config struct {
	// Name is the ingest node's name, one of the layout's Writers.
	Name string
	// Records keeps the provider records the ingest node reads back (the
	// walker updates them ad by ad); the Writer also sends every record
	// to the query nodes. Its index is not used. The Writer does not
	// close it.
	Records store.Store
	// Outbox holds the batches until the query nodes acknowledge them.
	// New requires it, and the Writer does not close it; Open requires
	// it nil and opens (and closes) an outbox of its own.
	Outbox *outbox.Outbox
	// Token is the bearer token of the query nodes' write API.
	Token string
	// Client sends the batches (nil: a client with a 30 s timeout).
	Client *http.Client
	// BatchBytes is the size at which the ops gathered for one query node
	// are sealed into a batch in the outbox (0: 1 MiB). A Flush seals
	// whatever is gathered.
	BatchBytes int
	// Heartbeat is how often an idle delivery loop tells its query node
	// that nothing waits for it (0: 1 s).
	Heartbeat time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed deliveries
	// (0: 100 ms and 10 s); it doubles after each failure.
	MinBackoff, MaxBackoff time.Duration
	// SegmentSize is the segment size of the outbox [Open] opens (0:
	// outbox.DefaultSegmentSize; see outbox.WithSegmentSize). A queue
	// that keeps up leaves up to a 16th of a segment of delivered
	// batches on disk, so a node on a small disk budget wants small
	// segments. [New], which takes the caller's outbox, refuses it.
	SegmentSize int64
	// Logger receives the Writer's log (nil: discard).
	Logger *slog.Logger
}

// Writer is the store.Store of an ingest node in the keyspace-sharded
// layer. See the package documentation.
type Writer struct {
	cfg Config
	log *slog.Logger
	// ownOutbox says that Open opened cfg.Outbox, which Close closes.
	ownOutbox bool

	mu    sync.Mutex
	place *keyspace.Placement
	bufs  map[string]*destBuf // by query node name
	// sentMD is the metadata last sent to every query node of the layout,
	// by provider and context ID; see Put.
	sentMD  map[string]string
	closed  bool
	changed chan struct{} // closed and replaced when the layout changes

	dmu   sync.Mutex
	dests map[string]*destState // delivery state by query node name
}

// destBuf gathers the ops routed to one query node until they are sealed.
type destBuf struct {
	ops  []keyspace.Op
	size int
	mhs  []byte // arena holding copies of the multihashes of ops
}

type destState struct {
	lastErr  string
	failures int
}

// New returns a Writer routing by layout l over cfg.Outbox, which stays
// the caller's. It starts nothing: [Writer.Run] delivers the outbox.
func New(cfg Config, l keyspace.Layout) (*Writer, error) {
	switch {
	case cfg.Outbox == nil:
		return nil, fmt.Errorf("%w: Outbox is nil", ErrInvalidConfig)
	case cfg.SegmentSize != 0:
		return nil, fmt.Errorf("%w: SegmentSize is set, and New takes an outbox opened already (give it outbox.WithSegmentSize)", ErrInvalidConfig)
	}
	return newWriter(cfg, l)
}

// OutboxDir is the directory, under the one given to [Open], of the
// outbox Open opens.
const OutboxDir = "outbox"

// Open returns a Writer routing by layout l, as [New] does, over an
// outbox of its own in dir/[OutboxDir], which it opens (creating the
// directories) and which [Writer.Close] closes. The outbox keeps what it
// held when it was last closed, so a Writer opened again on the same
// dir delivers what the last one left. cfg.Outbox must be nil (pass an
// outbox of your own to New); the outbox logs to cfg.Logger. A config or
// layout New would refuse is refused before anything is created.
func Open(dir string, cfg Config, l keyspace.Layout) (*Writer, error) {
	switch {
	case dir == "":
		return nil, fmt.Errorf("%w: Open needs a directory for the outbox", ErrInvalidConfig)
	case cfg.Outbox != nil:
		return nil, fmt.Errorf("%w: Outbox is set, and Open opens its own in %s (New takes yours)", ErrInvalidConfig, filepath.Join(dir, OutboxDir))
	}
	w, err := newWriter(cfg, l)
	if err != nil {
		return nil, err
	}
	opts := []outbox.Option{outbox.WithLogger(w.log)}
	if cfg.SegmentSize > 0 {
		opts = append(opts, outbox.WithSegmentSize(cfg.SegmentSize))
	}
	ob, err := outbox.Open(filepath.Join(dir, OutboxDir), opts...)
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	w.cfg.Outbox, w.ownOutbox = ob, true
	return w, nil
}

// newWriter validates cfg but for Outbox, which it does not use, and
// returns the Writer.
func newWriter(cfg Config, l keyspace.Layout) (*Writer, error) {
	switch {
	case cfg.Name == "":
		return nil, fmt.Errorf("%w: Name is empty", ErrInvalidConfig)
	case cfg.Records == nil:
		return nil, fmt.Errorf("%w: Records is nil", ErrInvalidConfig)
	case cfg.BatchBytes < 0 || cfg.Heartbeat < 0 || cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 || cfg.SegmentSize < 0:
		return nil, fmt.Errorf("%w: negative BatchBytes, Heartbeat, backoff or SegmentSize", ErrInvalidConfig)
	}
	if cfg.BatchBytes == 0 {
		cfg.BatchBytes = 1 << 20
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	p, err := keyspace.NewPlacement(l)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(l.Writers, cfg.Name) {
		return nil, fmt.Errorf("%w: writer %q is not among the layout's writers %v", ErrInvalidConfig, cfg.Name, l.Writers)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{
		cfg: cfg, log: log, place: p,
		bufs: map[string]*destBuf{}, sentMD: map[string]string{}, changed: make(chan struct{}),
		dests: map[string]*destState{},
	}, nil
}

// Layout returns the layout the Writer routes by.
func (w *Writer) Layout() keyspace.Layout {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.place.Layout()
}

// SetLayout makes the Writer route by l from now on. What it gathered
// under the previous layout is sealed first, tagged with that layout's
// epoch. The outboxes of query nodes l no longer names are removed. An
// older epoch is refused with an error wrapping [keyspace.ErrStaleEpoch];
// the same epoch changes nothing.
func (w *Writer) SetLayout(l keyspace.Layout) error {
	p, err := keyspace.NewPlacement(l)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch cur := w.place.Epoch(); {
	case l.Epoch == cur:
		return nil
	case l.Epoch < cur:
		return fmt.Errorf("%w: layout epoch %d is older than %d", keyspace.ErrStaleEpoch, l.Epoch, cur)
	}
	if err := w.sealAllLocked(); err != nil {
		return err
	}
	for _, d := range w.cfg.Outbox.Dests() {
		if p.Node(d) < 0 {
			if err := w.cfg.Outbox.Remove(d); err != nil {
				return fmt.Errorf("writer: remove the outbox of %s, which left: %w", d, err)
			}
		}
	}
	w.place = p
	clear(w.sentMD) // nodes that joined were sent none of it
	close(w.changed)
	w.changed = make(chan struct{})
	w.log.Info("layout", "epoch", l.Epoch, "phase", l.Phase, "current", l.Current, "next", l.Next)
	return nil
}

// ReloadFile reads the layout file at path ([keyspace.Load]) and routes
// by it from now on, as [Writer.SetLayout] does. A file that does not
// load, or holds a layout older than the one in force (an error wrapping
// [keyspace.ErrStaleEpoch]), is refused, and the Writer keeps its
// layout. An ingest node calls it when its layout file changes (on
// SIGHUP, say).
func (w *Writer) ReloadFile(path string) error {
	l, err := keyspace.Load(path)
	if err != nil {
		return err
	}
	return w.SetLayout(l)
}

// add appends op to the buffer of the query node named dest, merging it
// into the last op when both put the same value, and seals the buffer
// when it is full. mh, when not nil, is copied into the buffer.
func (w *Writer) addLocked(dest string, op keyspace.Op, mh multihash.Multihash) error {
	b := w.bufs[dest]
	if b == nil {
		b = &destBuf{}
		w.bufs[dest] = b
	}
	switch n := len(b.ops); {
	case mh == nil:
		b.ops = append(b.ops, op)
		b.size += 16 + len(op.Value.ProviderID) + len(op.Value.ContextID) + len(op.Value.Metadata)
	case n > 0 && b.ops[n-1].Kind == op.Kind && sameTarget(&b.ops[n-1], &op):
		b.ops[n-1].Multihashes = append(b.ops[n-1].Multihashes, b.keep(mh))
		b.size += len(mh) + 2
	default:
		op.Multihashes = []multihash.Multihash{b.keep(mh)}
		b.ops = append(b.ops, op)
		b.size += 16 + len(op.Value.ProviderID) + len(op.Value.ContextID) + len(op.Value.Metadata) + len(mh) + 2
	}
	if b.size >= w.cfg.BatchBytes {
		return w.sealLocked(dest, b)
	}
	return nil
}

// keep copies mh into the buffer's arena: the caller may reuse its slice.
func (b *destBuf) keep(mh multihash.Multihash) multihash.Multihash {
	start := len(b.mhs)
	b.mhs = append(b.mhs, mh...)
	return b.mhs[start:len(b.mhs):len(b.mhs)]
}

func sameTarget(a, b *keyspace.Op) bool {
	return a.Value.ProviderID == b.Value.ProviderID && bytes.Equal(a.Value.ContextID, b.Value.ContextID) &&
		bytes.Equal(a.Value.Metadata, b.Value.Metadata)
}

// sealLocked encodes the ops gathered for dest as one batch in the
// outbox, under the current epoch.
func (w *Writer) sealLocked(dest string, b *destBuf) error {
	if len(b.ops) == 0 {
		return nil
	}
	payload, err := keyspace.AppendOps(make([]byte, 0, b.size+64), b.ops...)
	if err != nil {
		return err
	}
	if _, err := w.cfg.Outbox.Append(dest, w.place.Epoch(), payload); err != nil {
		return fmt.Errorf("writer: outbox of %s: %w", dest, err)
	}
	b.ops, b.size = b.ops[:0], 0
	b.mhs = b.mhs[:0:0] // the ops of the next batch must not share the arena
	return nil
}

func (w *Writer) sealAllLocked() error {
	var errs []error
	for _, d := range slices.Sorted(mapsKeys(w.bufs)) {
		errs = append(errs, w.sealLocked(d, w.bufs[d]))
	}
	return errors.Join(errs...)
}

func mapsKeys[V any](m map[string]V) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (w *Writer) check() error {
	if w.closed {
		return store.ErrClosed
	}
	return nil
}

// Put routes each multihash to its owners.
func (w *Writer) Put(ctx context.Context, v store.Value, mhs ...multihash.Multihash) error {
	if err := v.Validate(); err != nil {
		return err
	}
	for _, mh := range mhs {
		if err := store.ValidateMultihash(mh); err != nil {
			return err
		}
	}
	v = v.Clone()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	nodes := w.place.Nodes()
	var owners [8]int
	got := make([]bool, len(nodes))
	for _, mh := range mhs {
		for _, o := range w.place.AppendWriteOwners(owners[:0], mh) {
			got[o] = true
			if err := w.addLocked(nodes[o].Name, keyspace.Op{Kind: keyspace.OpPut, Value: v}, mh); err != nil {
				return err
			}
		}
	}
	// A put replaces the metadata of its context on every multihash of
	// the context, and the others are on other nodes: they get the
	// metadata as an update (one op each, ignored where the context is
	// not), unless it is what they were last sent.
	key := string(v.ProviderID) + "\x00" + string(v.ContextID)
	if md, ok := w.sentMD[key]; !ok || md != string(v.Metadata) {
		for i, n := range nodes {
			if got[i] {
				continue
			}
			if err := w.addLocked(n.Name, keyspace.Op{Kind: keyspace.OpUpdateMetadata, Value: v}, nil); err != nil {
				return err
			}
		}
		w.rememberMD(key, string(v.Metadata))
	}
	return ctx.Err()
}

// maxSentMD bounds the contexts whose last metadata sent is remembered.
const maxSentMD = 1 << 16

// rememberMD records that every query node of the layout has been sent
// md as the metadata of the context key. w.mu is held.
func (w *Writer) rememberMD(key, md string) {
	if len(w.sentMD) >= maxSentMD {
		clear(w.sentMD) // forgetting only costs an update op per node
	}
	w.sentMD[key] = md
}

// Get is not served: see [ErrNoIndex].
func (w *Writer) Get(ctx context.Context, mh multihash.Multihash) ([]store.Value, error) {
	return nil, fmt.Errorf("%w: Get", ErrNoIndex)
}

// Remove routes the removal of each multihash to its owners.
func (w *Writer) Remove(ctx context.Context, provider peer.ID, contextID []byte, mhs ...multihash.Multihash) error {
	v := store.Value{ProviderID: provider, ContextID: slices.Clone(contextID)}
	if err := v.Validate(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	nodes := w.place.Nodes()
	var owners [8]int
	for _, mh := range mhs {
		if err := store.ValidateMultihash(mh); err != nil {
			return err
		}
		for _, o := range w.place.AppendWriteOwners(owners[:0], mh) {
			if err := w.addLocked(nodes[o].Name, keyspace.Op{Kind: keyspace.OpRemove, Value: v}, mh); err != nil {
				return err
			}
		}
	}
	return nil
}

// broadcast sends op to every query node of the layout: context-wide
// operations and provider records, one op per node whatever the number of
// multihashes they cover.
func (w *Writer) broadcast(op keyspace.Op) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	for _, n := range w.place.Nodes() {
		if err := w.addLocked(n.Name, op, nil); err != nil {
			return err
		}
	}
	return nil
}

// RemoveProviderContext sends the removal to every query node.
func (w *Writer) RemoveProviderContext(ctx context.Context, provider peer.ID, contextID []byte) error {
	v := store.Value{ProviderID: provider, ContextID: slices.Clone(contextID)}
	if err := v.Validate(); err != nil {
		return err
	}
	return w.broadcast(keyspace.Op{Kind: keyspace.OpRemoveContext, Value: v})
}

// RemoveProvider sends the removal to every query node.
func (w *Writer) RemoveProvider(ctx context.Context, provider peer.ID) error {
	if provider == "" {
		return fmt.Errorf("%w: empty provider ID", store.ErrInvalidValue)
	}
	return w.broadcast(keyspace.Op{Kind: keyspace.OpRemoveProvider, Value: store.Value{ProviderID: provider}})
}

// UpdateMetadata sends the update to every query node. The Writer cannot
// tell whether the context is stored anywhere, so it never returns
// [store.ErrNotFound]; a query node without the context ignores it.
func (w *Writer) UpdateMetadata(ctx context.Context, provider peer.ID, contextID, metadata []byte) error {
	v := store.Value{ProviderID: provider, ContextID: slices.Clone(contextID), Metadata: slices.Clone(metadata)}
	if err := v.Validate(); err != nil {
		return err
	}
	w.mu.Lock()
	delete(w.sentMD, string(provider)+"\x00"+string(contextID))
	w.mu.Unlock()
	return w.broadcast(keyspace.Op{Kind: keyspace.OpUpdateMetadata, Value: v})
}

// PutProvider stores the record in Records and sends it to every query
// node.
func (w *Writer) PutProvider(ctx context.Context, info store.ProviderInfo) error {
	if err := w.cfg.Records.PutProvider(ctx, info); err != nil {
		return err
	}
	return w.broadcast(keyspace.Op{Kind: keyspace.OpPutProvider, Provider: &info})
}

// Provider reads the record from Records.
func (w *Writer) Provider(ctx context.Context, id peer.ID) (store.ProviderInfo, error) {
	return w.cfg.Records.Provider(ctx, id)
}

// Providers reads the records from Records.
func (w *Writer) Providers(ctx context.Context) iter.Seq2[store.ProviderInfo, error] {
	return w.cfg.Records.Providers(ctx)
}

// DeleteProvider deletes the record from Records and on every query node.
func (w *Writer) DeleteProvider(ctx context.Context, id peer.ID) error {
	if err := w.cfg.Records.DeleteProvider(ctx, id); err != nil {
		return err
	}
	return w.broadcast(keyspace.Op{Kind: keyspace.OpDeleteProvider, Value: store.Value{ProviderID: id}})
}

// All is not served: see [ErrNoIndex].
func (w *Writer) All(ctx context.Context) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		yield(store.Entry{}, fmt.Errorf("%w: All", ErrNoIndex))
	}
}

// Size is the size of Records; the outbox's files are under the ingest
// node's directory, where a freeze monitor counts them.
func (w *Writer) Size(ctx context.Context) (int64, error) {
	return w.cfg.Records.Size(ctx)
}

// Flush seals what is gathered into the outbox and syncs it, then
// flushes Records: once it returns, every write made before it survives
// a kill and will be delivered. The ingest walker flushes its store
// before it records a position, so a checkpoint never runs ahead of the
// outbox.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	if err := w.check(); err != nil {
		w.mu.Unlock()
		return err
	}
	err := w.sealAllLocked()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	return w.sync(ctx)
}

// sync syncs the outbox, then flushes Records.
func (w *Writer) sync(ctx context.Context) error {
	if err := w.cfg.Outbox.Sync(); err != nil {
		return fmt.Errorf("writer: sync outbox: %w", err)
	}
	return w.cfg.Records.Flush(ctx)
}

// Close flushes, as Flush does, and refuses later calls; a second Close
// returns nil. It does not close Records, nor an Outbox given to [New];
// it closes the outbox [Open] opened, so [Writer.Run] must have returned
// before. It does not wait for delivery: Run does that until its context
// ends.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	// Sealed and closed in one critical section: no write slips in
	// between to be lost.
	w.closed = true
	err := w.sealAllLocked()
	w.mu.Unlock()
	err = errors.Join(err, w.sync(context.Background()))
	if w.ownOutbox {
		if cerr := w.cfg.Outbox.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("writer: close outbox: %w", cerr))
		}
	}
	return err
}

var _ store.Store = (*Writer)(nil)
