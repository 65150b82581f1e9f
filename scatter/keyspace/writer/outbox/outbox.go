package outbox

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Defaults and limits.
const (
	// DefaultSegmentSize is the size past which a queue starts a new
	// segment file.
	DefaultSegmentSize = 64 << 20
	// MaxDestLen is the longest destination name, in bytes (its hex form
	// names a directory).
	MaxDestLen = 100
)

// Names in the outbox directory.
const (
	streamFile  = "stream"
	lockFile    = "lock"
	queuePrefix = "q-"
	ackFile     = "ack"
	removedFile = "removed"
	segSuffix   = ".seg"
	tmpSuffix   = ".tmp"
)

// Record is one appended record, as [Outbox.Peek] returns it.
type Record struct {
	// Stream is the stream of the queue the record is in: with Seq, it
	// names the record for the receiver.
	Stream  uint64
	Seq     uint64
	Epoch   uint64
	Payload []byte
}

// Status is a snapshot of one destination's queue.
type Status struct {
	// Stream is the queue's stream id ([Outbox.Peek] stamps it on each
	// record); 0 when dest has no queue.
	Stream  uint64
	Pending int   // records appended and not acknowledged
	Bytes   int64 // their size on disk, record headers included
	Head    uint64
	Acked   uint64
	// OldestEpoch is the epoch of the oldest record not acknowledged, 0
	// when there is none.
	OldestEpoch uint64
}

// Option configures [Open]; an invalid one makes Open fail with an error
// wrapping [ErrInvalidOption].
type Option func(*config) error

type config struct {
	log     *slog.Logger
	segSize int64
}

// newConfig is where the defaults live.
func newConfig() config {
	return config{log: slog.New(slog.DiscardHandler), segSize: DefaultSegmentSize}
}

// WithLogger sets the logger (discard by default): torn tails truncated
// at Open, leftovers removed.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

// WithSegmentSize sets the size past which a queue starts a new segment
// file ([DefaultSegmentSize] by default); it must be positive. A record
// larger than n goes alone in a segment.
func WithSegmentSize(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithSegmentSize(%d): must be positive", ErrInvalidOption, n)
		}
		c.segSize = n
		return nil
	}
}

// Outbox is a set of durable queues, one per destination, in one
// directory. See the package documentation.
type Outbox struct {
	dir    string
	cfg    config
	stream uint64
	lock   *os.File
	done   chan struct{} // closed by Close

	mu        sync.RWMutex
	closed    bool
	queues    map[string]*queue
	rootDirty bool          // a queue directory was created since the last Sync
	newQueue  chan struct{} // closed and replaced when a queue is created
}

// Open opens the outbox in dir, creating dir if needed, and reads every
// queue in it: each segment is checked record by record, a torn tail is
// truncated (and logged), segments whose records are all acknowledged
// are deleted. A corrupt record anywhere but at the tail is an error
// wrapping [ErrCorrupt] that names the file and the offset. The
// directory is locked until [Outbox.Close].
func Open(dir string, opts ...Option) (*Outbox, error) {
	cfg := newConfig()
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("outbox: open: %w", err)
	}
	o := &Outbox{dir: dir, cfg: cfg, done: make(chan struct{}), queues: map[string]*queue{}, newQueue: make(chan struct{})}
	lock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, err
	}
	o.lock = lock
	if err := o.load(); err != nil {
		for _, q := range o.queues {
			q.closeFiles()
		}
		lock.Close()
		return nil, err
	}
	return o, nil
}

func (o *Outbox) load() error {
	entries, err := os.ReadDir(o.dir)
	if err != nil {
		return fmt.Errorf("outbox: open: %w", err)
	}
	hasQueues := false
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, queuePrefix) && e.IsDir() && !strings.HasSuffix(name, tmpSuffix) {
			hasQueues = true
		}
	}
	// The outbox's stream id first: the queues made before queues had
	// streams of their own number their records in it.
	if err := o.loadStream(hasQueues); err != nil {
		return err
	}
	dirty := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			// A queue being created or removed when the process stopped,
			// or a file being replaced.
			if err := os.RemoveAll(filepath.Join(o.dir, name)); err != nil {
				return fmt.Errorf("outbox: open: %w", err)
			}
			o.cfg.log.Info("outbox: removed leftover", "file", filepath.Join(o.dir, name))
		case strings.HasPrefix(name, queuePrefix) && e.IsDir():
			b, err := hex.DecodeString(strings.TrimPrefix(name, queuePrefix))
			if err != nil || len(b) == 0 {
				return fmt.Errorf("%w: %s: not a queue directory name", ErrCorrupt, filepath.Join(o.dir, name))
			}
			q, err := o.loadQueue(string(b), filepath.Join(o.dir, name))
			if err != nil {
				return err
			}
			if q.gone {
				// Removed by an outbox of before queues had streams of
				// their own, which kept its last Seq: now a removed queue
				// leaves nothing, and an Append starts a new stream.
				if err := os.RemoveAll(q.dir); err != nil {
					return fmt.Errorf("outbox: open: delete removed queue %q: %w", q.name, err)
				}
				o.cfg.log.Info("outbox: deleted a removed queue", "dir", q.dir)
				dirty = true
				continue
			}
			o.queues[string(b)] = q
		}
	}
	if dirty {
		if err := syncDir(o.dir); err != nil {
			return fmt.Errorf("outbox: open: %w", err)
		}
	}
	return nil
}

// loadStream reads the stream id, or draws and writes one in a new
// outbox.
func (o *Outbox) loadStream(hasQueues bool) error {
	path := filepath.Join(o.dir, streamFile)
	id, err := readStream(path)
	switch {
	case err == nil:
		o.stream = id
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	case hasQueues:
		// Queues without their stream id: a new id would make receivers
		// take old seqs for new ones.
		return fmt.Errorf("%w: %s missing beside queues", ErrCorrupt, path)
	}
	if o.stream, err = newStream(); err != nil {
		return err
	}
	return writeStream(path, o.stream)
}

// readStream reads a stream id file; an error wrapping fs.ErrNotExist
// when there is none.
func readStream(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, err
	case err != nil:
		return 0, fmt.Errorf("outbox: open: %w", err)
	case len(b) != 12 || binary.BigEndian.Uint32(b[8:]) != crc(b[:8]) || binary.BigEndian.Uint64(b) == 0:
		return 0, fmt.Errorf("%w: %s: bad stream id", ErrCorrupt, path)
	}
	return binary.BigEndian.Uint64(b), nil
}

// newStream draws a stream id: random, not 0.
func newStream() (uint64, error) {
	for {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return 0, fmt.Errorf("outbox: stream id: %w", err)
		}
		if id := binary.BigEndian.Uint64(r[:]); id != 0 {
			return id, nil
		}
	}
}

// writeStream writes a stream id file durably.
func writeStream(path string, id uint64) error {
	b := binary.BigEndian.AppendUint64(nil, id)
	b = binary.BigEndian.AppendUint32(b, crc(b))
	if err := writeFileSync(path, b); err != nil {
		return fmt.Errorf("outbox: write stream id: %w", err)
	}
	return nil
}

// writeFileSync writes a file atomically and durably: a temporary file,
// fsync, rename, fsync of the directory.
func writeFileSync(path string, b []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Stream returns the outbox's stream id: a random non-zero number drawn
// when the directory was first opened and kept in it. The queues made
// before each queue had a stream of its own number their records in it;
// every other queue has its own ([Status].Stream, [Record].Stream).
func (o *Outbox) Stream() uint64 { return o.stream }

func checkDest(dest string) error {
	if dest == "" || len(dest) > MaxDestLen {
		return fmt.Errorf("%w: %q (1 to %d bytes)", ErrInvalidDest, dest, MaxDestLen)
	}
	return nil
}

// queue returns dest's queue; with create, it creates it (and its
// directory) if needed, else it returns nil for an unknown dest.
func (o *Outbox) queue(dest string, create bool) (*queue, error) {
	o.mu.RLock()
	q, closed := o.queues[dest], o.closed
	o.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case q != nil || !create:
		return q, nil
	}
	if err := checkDest(dest); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrClosed
	}
	if q := o.queues[dest]; q != nil {
		return q, nil
	}
	dir := filepath.Join(o.dir, queuePrefix+hex.EncodeToString([]byte(dest)))
	stream, err := createQueueDir(dir)
	if err != nil {
		return nil, fmt.Errorf("outbox: create queue %q: %w", dest, err)
	}
	q = newQueue(o, dest, dir, stream)
	o.queues[dest] = q
	o.rootDirty = true
	close(o.newQueue)
	o.newQueue = make(chan struct{})
	return q, nil
}

// createQueueDir creates a queue directory holding a new stream id, all
// at once: it is built under a temporary name (which Open deletes) and
// renamed, so that no queue directory is ever seen without its stream.
func createQueueDir(dir string) (uint64, error) {
	stream, err := newStream()
	if err != nil {
		return 0, err
	}
	tmp := dir + tmpSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return 0, err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return 0, err
	}
	if err := writeStream(filepath.Join(tmp, streamFile), stream); err != nil {
		os.RemoveAll(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return 0, err
	}
	return stream, nil
}

// Append adds a record for dest and returns its Seq. A queue's Seqs start
// at 1 and increase by one with each Append, and are never reused within
// its stream, not after acknowledgements nor restarts. The first Append
// to a dest without a queue (never appended to, or removed since) creates
// one, with a new stream id, so Seqs start at 1 again under that stream.
// The record is written to the operating system before Append returns (a
// kill of the process does not lose it, a power loss may) and is durable
// once [Outbox.Sync] returns. payload is not retained.
func (o *Outbox) Append(dest string, epoch uint64, payload []byte) (uint64, error) {
	if len(payload) > MaxPayload {
		return 0, fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLarge, len(payload), MaxPayload)
	}
	for {
		q, err := o.queue(dest, true)
		if err != nil {
			return 0, err
		}
		seq, err := q.append(epoch, payload)
		if errors.Is(err, errGone) {
			continue // removed meanwhile: the next queue takes it
		}
		return seq, err
	}
}

// Sync makes every record appended and every acknowledgement made before
// it was called durable: it fsyncs each queue's segment written since
// the last Sync, the directories where files were created, and the ack
// files. Errors from the queues are joined.
func (o *Outbox) Sync() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	qs := o.queueList()
	rootDirty := o.rootDirty
	o.rootDirty = false
	o.mu.Unlock()
	return o.syncAll(qs, rootDirty)
}

func (o *Outbox) syncAll(qs []*queue, rootDirty bool) error {
	var errs []error
	for _, q := range qs {
		errs = append(errs, q.sync())
	}
	if rootDirty {
		if err := syncDir(o.dir); err != nil {
			o.mu.Lock()
			o.rootDirty = true
			o.mu.Unlock()
			errs = append(errs, fmt.Errorf("outbox: sync %s: %w", o.dir, err))
		}
	}
	return errors.Join(errs...)
}

func (o *Outbox) queueList() []*queue {
	qs := make([]*queue, 0, len(o.queues))
	for _, q := range o.queues {
		qs = append(qs, q)
	}
	return qs
}

// Peek returns dest's records with Seq > after (and above the last
// acknowledged one), in order: at most maxRecords of them and at most
// maxBytes of payload, but always at least one if there is one, however
// large. It reads from the segment files; the records are the caller's.
func (o *Outbox) Peek(dest string, after uint64, maxRecords int, maxBytes int) ([]Record, error) {
	q, err := o.queue(dest, false)
	if q == nil {
		return nil, err
	}
	return q.peek(after, maxRecords, maxBytes)
}

// Ack records that dest's records up to through are delivered, in
// whichever queue dest has when it is called; a delivery loop, which can
// race a [Outbox.Remove], uses [Outbox.AckStream]. It is
// kept in memory and written at the next [Outbox.Sync] or Close, or at
// once when it frees a segment file, which it then deletes; after a
// restart, records acknowledged since the last write may come back (and
// receivers drop them by Seq), never one older. An Ack at or below the
// last one does nothing; one past the head is an error wrapping
// [ErrAckAhead].
func (o *Outbox) Ack(dest string, through uint64) error {
	q, err := o.queue(dest, false)
	switch {
	case err != nil:
		return err
	case q == nil && through == 0:
		return nil
	case q == nil:
		return fmt.Errorf("%w: %q has no queue (ack %d)", ErrAckAhead, dest, through)
	}
	return q.ack(through)
}

// AckStream is [Outbox.Ack] for the queue of stream: when dest's queue is
// no longer that stream's (it was removed, perhaps created again, since
// the records were peeked), it does nothing, so an acknowledgement meant
// for a stream never lands on the next one.
func (o *Outbox) AckStream(dest string, stream, through uint64) error {
	q, err := o.queue(dest, false)
	if err != nil || q == nil || q.stream != stream {
		return err
	}
	return q.ack(through)
}

// Wait blocks until dest's head passes after (a record with Seq > after
// exists), ctx ends (its error) or the outbox closes ([ErrClosed]).
func (o *Outbox) Wait(ctx context.Context, dest string, after uint64) error {
	for {
		o.mu.RLock()
		q, closed, ch := o.queues[dest], o.closed, o.newQueue
		o.mu.RUnlock()
		if closed {
			return ErrClosed
		}
		if q != nil {
			q.mu.Lock()
			head, qclosed, gone := q.head, q.closed, q.gone
			ch = q.notify
			q.mu.Unlock()
			switch {
			case gone:
				continue // removed: the map no longer has it
			case qclosed:
				return ErrClosed
			case head > after:
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.done:
			return ErrClosed
		case <-ch:
		}
	}
}

// Status returns a snapshot of dest's queue; the zero Status for a
// destination without one.
func (o *Outbox) Status(dest string) Status {
	q, _ := o.queue(dest, false)
	if q == nil {
		return Status{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gone {
		return Status{}
	}
	return Status{
		Stream:      q.stream,
		Pending:     int(q.head - q.acked),
		Bytes:       q.endL - q.ackL,
		Head:        q.head,
		Acked:       q.acked,
		OldestEpoch: q.oldest,
	}
}

// Dests returns, sorted, every destination with a queue, whether it
// holds records or not.
func (o *Outbox) Dests() []string {
	o.mu.RLock()
	qs := o.queueList()
	o.mu.RUnlock()
	var ds []string
	for _, q := range qs {
		q.mu.Lock()
		if !q.gone && !q.closed {
			ds = append(ds, q.name)
		}
		q.mu.Unlock()
	}
	slices.Sort(ds)
	return ds
}

// Remove deletes dest's queue: every record in it is dropped and its
// directory deleted, stream id and all; when it returns, the deletion is
// durable. A later Append to dest creates a new queue with a new stream,
// whose Seqs start at 1: no Seq is reused within a stream, and a receiver
// that knew the old stream sees a new one. Removing an unknown dest does
// nothing.
func (o *Outbox) Remove(dest string) error {
	q, err := o.queue(dest, false)
	if q == nil {
		return err
	}
	return q.remove()
}

// Close syncs the outbox like [Outbox.Sync], closes its files and
// releases the directory; it is idempotent. Methods called afterwards
// return [ErrClosed]; Waits end with it.
func (o *Outbox) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	close(o.done)
	qs := o.queueList()
	rootDirty := o.rootDirty
	o.mu.Unlock()
	err := o.syncAll(qs, rootDirty)
	for _, q := range qs {
		q.syncMu.Lock()
		q.mu.Lock()
		q.closed = true
		q.closeFiles()
		q.mu.Unlock()
		q.syncMu.Unlock()
	}
	if cerr := o.lock.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

var _ io.Closer = (*Outbox)(nil)
