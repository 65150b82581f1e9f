package keyspace

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// OpKind is the kind of one write in a [Batch]; each is one method of
// [store.Store].
type OpKind uint8

// The write operations, numbered as on the wire.
const (
	OpPut             OpKind = 1 // Index.Put(Value, Multihashes...)
	OpRemove          OpKind = 2 // Index.Remove(ProviderID, ContextID, Multihashes...)
	OpRemoveContext   OpKind = 3 // Index.RemoveProviderContext(ProviderID, ContextID)
	OpRemoveProvider  OpKind = 4 // Index.RemoveProvider(ProviderID)
	OpUpdateMetadata  OpKind = 5 // Index.UpdateMetadata(ProviderID, ContextID, Metadata)
	OpPutProvider     OpKind = 6 // ProviderRecords.PutProvider(Provider)
	OpDeleteProvider  OpKind = 7 // ProviderRecords.DeleteProvider(ProviderID)
	maxOpKind                = OpDeleteProvider
	batchMagic               = "IKSB"
	batchVersion             = 1
	maxWriterName            = 256
	maxProviderRecord        = 1 << 20
)

var opNames = [...]string{"", "put", "remove", "remove-context", "remove-provider", "update-metadata", "put-provider", "delete-provider"}

func (k OpKind) String() string {
	if k == 0 || k > maxOpKind {
		return fmt.Sprintf("op(%d)", uint8(k))
	}
	return opNames[k]
}

// Op is one write: a [store.Store] method and its arguments. Value carries
// the provider, context and metadata each kind takes (ProviderID alone
// for OpRemoveProvider and OpDeleteProvider).
type Op struct {
	Kind        OpKind
	Value       store.Value
	Multihashes []multihash.Multihash // OpPut, OpRemove
	Provider    *store.ProviderInfo   // OpPutProvider
}

// Apply applies op to st. Applying an op twice in a row changes nothing
// the first did not, and so does applying a whole batch twice: every op
// sets state, none counts.
func (op *Op) Apply(ctx context.Context, st store.Store) error {
	v := op.Value
	switch op.Kind {
	case OpPut:
		return st.Put(ctx, v, op.Multihashes...)
	case OpRemove:
		return st.Remove(ctx, v.ProviderID, v.ContextID, op.Multihashes...)
	case OpRemoveContext:
		return st.RemoveProviderContext(ctx, v.ProviderID, v.ContextID)
	case OpRemoveProvider:
		return st.RemoveProvider(ctx, v.ProviderID)
	case OpUpdateMetadata:
		return st.UpdateMetadata(ctx, v.ProviderID, v.ContextID, v.Metadata)
	case OpPutProvider:
		if op.Provider == nil {
			return fmt.Errorf("%w: put-provider without a record", ErrInvalidBatch)
		}
		return st.PutProvider(ctx, *op.Provider)
	case OpDeleteProvider:
		return st.DeleteProvider(ctx, v.ProviderID)
	}
	return fmt.Errorf("%w: unknown %s", ErrInvalidBatch, op.Kind)
}

// Batch is what an ingest node sends a query node in one request: the
// writes routed to it, in order, numbered by the writer. A query node
// applies each writer's batches once and in order of Seq, so a batch
// delivered twice (a retry after a lost answer) changes nothing.
type Batch struct {
	// Writer names the ingest node (one of [Layout].Writers).
	Writer string
	// Stream identifies the writer's queue for this receiver: a random
	// number drawn when the queue is created. A receiver numbers batches
	// per (Writer, Stream), so a writer whose outbox was lost and
	// recreated, or whose queue was removed when the receiver left the
	// layout and created again when it came back, starts again at Seq 1
	// instead of being taken for a replay. 0 (a heartbeat only) says the
	// writer holds no queue for the receiver: nothing waits for it.
	Stream uint64
	// Epoch is the layout epoch the writes were routed under.
	Epoch uint64
	// Seq numbers the writer's batches to this receiver, from 1; a batch
	// with no ops is a heartbeat carrying the writer's position.
	Seq uint64
	// Drained says that nothing after Seq was waiting for the receiver in
	// the writer's outbox when the batch was sent.
	Drained bool
	Ops     []Op
}

// AppendBinary appends b's wire form to dst: [Batch.AppendHeader]
// followed by [AppendOps] of b.Ops. It validates each op as the store
// would, so that a batch that encodes applies.
func (b *Batch) AppendBinary(dst []byte) ([]byte, error) {
	dst, err := b.AppendHeader(dst)
	if err != nil {
		return nil, err
	}
	return AppendOps(dst, b.Ops...)
}

// AppendHeader appends the wire form of b's header (everything but the
// ops) to dst. A batch on the wire is a header followed by an ops section
// ([AppendOps]), so a writer can keep encoded ops in its outbox and add
// the header when it sends them.
func (b *Batch) AppendHeader(dst []byte) ([]byte, error) {
	if len(b.Writer) == 0 || len(b.Writer) > maxWriterName {
		return nil, fmt.Errorf("%w: writer name of %d bytes", ErrInvalidBatch, len(b.Writer))
	}
	dst = append(dst, batchMagic...)
	dst = binary.AppendUvarint(dst, batchVersion)
	dst = appendBytes(dst, []byte(b.Writer))
	dst = binary.AppendUvarint(dst, b.Stream)
	dst = binary.AppendUvarint(dst, b.Epoch)
	dst = binary.AppendUvarint(dst, b.Seq)
	flags := byte(0)
	if b.Drained {
		flags |= 1
	}
	return append(dst, flags), nil
}

// AppendOps appends the ops section of a batch to dst: the number of ops,
// then each op. It validates each op as the store would.
func AppendOps(dst []byte, ops ...Op) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(ops)))
	for i := range ops {
		var err error
		if dst, err = ops[i].appendBinary(dst); err != nil {
			return nil, fmt.Errorf("op %d: %w", i, err)
		}
	}
	return dst, nil
}

func (op *Op) appendBinary(dst []byte) ([]byte, error) {
	if err := op.validate(); err != nil {
		return nil, err
	}
	dst = append(dst, byte(op.Kind))
	v := op.Value
	switch op.Kind {
	case OpPut:
		dst = appendBytes(dst, []byte(v.ProviderID))
		dst = appendBytes(dst, v.ContextID)
		dst = appendBytes(dst, v.Metadata)
		dst = appendMultihashes(dst, op.Multihashes)
	case OpRemove:
		dst = appendBytes(dst, []byte(v.ProviderID))
		dst = appendBytes(dst, v.ContextID)
		dst = appendMultihashes(dst, op.Multihashes)
	case OpRemoveContext:
		dst = appendBytes(dst, []byte(v.ProviderID))
		dst = appendBytes(dst, v.ContextID)
	case OpRemoveProvider, OpDeleteProvider:
		dst = appendBytes(dst, []byte(v.ProviderID))
	case OpUpdateMetadata:
		dst = appendBytes(dst, []byte(v.ProviderID))
		dst = appendBytes(dst, v.ContextID)
		dst = appendBytes(dst, v.Metadata)
	case OpPutProvider:
		j, err := store.MarshalProviderInfo(*op.Provider)
		if err != nil {
			return nil, fmt.Errorf("%w: provider record: %w", ErrInvalidBatch, err)
		}
		dst = appendBytes(dst, j)
	}
	return dst, nil
}

// validate checks op's arguments as the store method it names would.
func (op *Op) validate() error {
	v := op.Value
	var err error
	switch op.Kind {
	case OpPut:
		err = v.Validate()
		if err == nil && len(op.Multihashes) == 0 {
			err = fmt.Errorf("%w: put of no multihashes", ErrInvalidBatch)
		}
	case OpRemove:
		err = store.Value{ProviderID: v.ProviderID, ContextID: v.ContextID}.Validate()
		if err == nil && len(op.Multihashes) == 0 {
			err = fmt.Errorf("%w: remove of no multihashes", ErrInvalidBatch)
		}
	case OpRemoveContext, OpUpdateMetadata:
		err = v.Validate()
	case OpRemoveProvider, OpDeleteProvider:
		if v.ProviderID == "" {
			err = fmt.Errorf("%w: empty provider ID", store.ErrInvalidValue)
		}
	case OpPutProvider:
		if op.Provider == nil {
			return fmt.Errorf("%w: put-provider without a record", ErrInvalidBatch)
		}
		err = op.Provider.Validate()
	default:
		return fmt.Errorf("%w: unknown %s", ErrInvalidBatch, op.Kind)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidBatch, op.Kind, err)
	}
	for i, mh := range op.Multihashes {
		if err := store.ValidateMultihash(mh); err != nil {
			return fmt.Errorf("%w: %s: multihash %d: %w", ErrInvalidBatch, op.Kind, i, err)
		}
	}
	return nil
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

func appendMultihashes(dst []byte, mhs []multihash.Multihash) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(mhs)))
	for _, mh := range mhs {
		dst = appendBytes(dst, mh)
	}
	return dst
}

// DecodeBatch decodes a batch from its wire form ([Batch.AppendBinary])
// and validates every op. The batch's byte slices alias data. Errors wrap
// [ErrInvalidBatch] and say where the input went wrong.
func DecodeBatch(data []byte) (Batch, error) {
	d := decoder{buf: data}
	var b Batch
	if len(data) < len(batchMagic) || string(data[:len(batchMagic)]) != batchMagic {
		return b, fmt.Errorf("%w: not a batch (no %q magic)", ErrInvalidBatch, batchMagic)
	}
	d.off = len(batchMagic)
	if v := d.uvarint("version"); d.err == nil && v != batchVersion {
		return b, fmt.Errorf("%w: version %d, want %d", ErrInvalidBatch, v, batchVersion)
	}
	w := d.bytes("writer", maxWriterName)
	b.Writer = string(w)
	b.Stream = d.uvarint("stream")
	b.Epoch = d.uvarint("epoch")
	b.Seq = d.uvarint("seq")
	flags := d.byte("flags")
	b.Drained = flags&1 != 0
	n := d.uvarint("op count")
	if d.err == nil && flags&^1 != 0 {
		d.fail("unknown flags %#x", flags)
	}
	if d.err == nil && len(w) == 0 {
		d.fail("empty writer name")
	}
	// Each op takes at least two bytes: no count may claim more.
	if d.err == nil && n > uint64(d.left())/2 {
		d.fail("%d ops in %d bytes", n, d.left())
	}
	if d.err != nil {
		return Batch{}, d.err
	}
	b.Ops = make([]Op, 0, n)
	for i := range n {
		op := d.op()
		if d.err != nil {
			return Batch{}, fmt.Errorf("op %d: %w", i, d.err)
		}
		if err := op.validate(); err != nil {
			return Batch{}, fmt.Errorf("op %d: %w", i, err)
		}
		b.Ops = append(b.Ops, op)
	}
	if d.left() != 0 {
		return Batch{}, fmt.Errorf("%w: %d bytes after the last op", ErrInvalidBatch, d.left())
	}
	return b, nil
}

type decoder struct {
	buf []byte
	off int
	err error
}

func (d *decoder) left() int { return len(d.buf) - d.off }

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrInvalidBatch, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		d.fail("bad varint (%s)", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.left() < 1 {
		d.fail("truncated (%s)", what)
		return 0
	}
	d.off++
	return d.buf[d.off-1]
}

func (d *decoder) bytes(what string, limit int) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) {
		d.fail("%s of %d bytes, limit %d", what, n, limit)
		return nil
	}
	if n > uint64(d.left()) {
		d.fail("truncated (%s of %d bytes, %d left)", what, n, d.left())
		return nil
	}
	b := d.buf[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b
}

func (d *decoder) op() Op {
	var op Op
	op.Kind = OpKind(d.byte("op kind"))
	if d.err == nil && (op.Kind == 0 || op.Kind > maxOpKind) {
		d.fail("unknown op kind %d", uint8(op.Kind))
		return op
	}
	provider := func() { op.Value.ProviderID = peer.ID(d.bytes("provider", 256)) }
	ctxID := func() { op.Value.ContextID = d.bytes("context ID", store.MaxContextIDLen) }
	md := func() { op.Value.Metadata = d.bytes("metadata", store.MaxMetadataLen) }
	mhs := func() {
		n := d.uvarint("multihash count")
		if d.err == nil && n > uint64(d.left())/2 {
			d.fail("%d multihashes in %d bytes", n, d.left())
			return
		}
		op.Multihashes = make([]multihash.Multihash, 0, n)
		for range n {
			mh := d.bytes("multihash", 256)
			if d.err != nil {
				return
			}
			op.Multihashes = append(op.Multihashes, mh)
		}
	}
	switch op.Kind {
	case OpPut:
		provider()
		ctxID()
		md()
		mhs()
	case OpRemove:
		provider()
		ctxID()
		mhs()
	case OpRemoveContext:
		provider()
		ctxID()
	case OpRemoveProvider, OpDeleteProvider:
		provider()
	case OpUpdateMetadata:
		provider()
		ctxID()
		md()
	case OpPutProvider:
		j := d.bytes("provider record", maxProviderRecord)
		if d.err != nil {
			return op
		}
		info, err := store.UnmarshalProviderInfo(j)
		if err != nil {
			d.fail("%v", err)
			return op
		}
		op.Provider = &info
	}
	return op
}
