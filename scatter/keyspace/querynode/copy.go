package querynode

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/httperr"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// Bounds of one export frame.
const (
	frameMaxKeys  = 16 << 10
	frameMaxBytes = 4 << 20
	// frameLimit is the largest frame a copy accepts: a frame holds at
	// most frameMaxKeys multihashes plus one value and record, far below.
	frameLimit = 64 << 20
)

var errMovedOn = errors.New("querynode: the layout moved on")

// errLoad marks a failure to build or ingest a table of the copy: the
// node's own, not its source's, so no other source is asked instead.
var errLoad = errors.New("querynode: loading a copied table")

// copy pulls the keys the node gains in place's change from their sources
// and applies them through g.
func (n *Node) copy(ctx context.Context, t *task, place *keyspace.Placement, g *guard) error {
	if g == nil {
		return fmt.Errorf("%w: no copy guard for epoch %d", ErrCopy, place.Epoch())
	}
	l := place.Layout()
	var skip, pending []string
	for _, s := range l.Current {
		if s != n.cfg.Name {
			pending = append(pending, s)
		}
	}
	var errs []error
	for len(pending) > 0 {
		failed, err := n.pullAll(ctx, t, place, g, pending, skip)
		if err != nil {
			return err
		}
		if len(failed) == 0 {
			break
		}
		for _, f := range failed {
			skip = append(skip, f.source)
			errs = append(errs, fmt.Errorf("source %s: %w", f.source, f.err))
		}
		if len(skip) >= l.Replication {
			return fmt.Errorf("%w: %d of the owners failed (replication %d), some keys may have no source left: %w", ErrCopy, len(skip), l.Replication, errors.Join(errs...))
		}
		// Ask every remaining source again, now standing in for the
		// failed ones (what each sent before comes again; Puts repeat
		// harmlessly).
		pending = slices.DeleteFunc(pending, func(s string) bool { return slices.Contains(skip, s) })
	}
	if err := n.cfg.Store.Flush(ctx); err != nil {
		return fmt.Errorf("%w: flush: %w", ErrCopy, err)
	}
	return nil
}

// copyParallel is how many sources a copy pulls from at once.
const copyParallel = 4

type sourceFailure struct {
	source string
	err    error
}

// pullAll pulls from every source of pending, copyParallel at a time,
// each through a table copy of its own when the store has a bulk path
// (so that each table holds one source's keys, in key order). It returns
// the sources that failed, or an error that ends the copy (cancelled,
// the layout moved on, a table that would not load).
func (n *Node) pullAll(ctx context.Context, t *task, place *keyspace.Placement, g *guard, pending, skip []string) ([]sourceFailure, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		failed []sourceFailure
		fatal  error
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, copyParallel)
	for _, s := range pending {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			err := n.pullOne(ctx, t, place, g, s, skip)
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if ctx.Err() != nil || errors.Is(err, errMovedOn) || errors.Is(err, errLoad) {
				if fatal == nil {
					fatal = err
				}
				cancel()
				return
			}
			n.log.Warn("copy source failed; its keys go to the next owners", "source", s, "err", err)
			failed = append(failed, sourceFailure{s, err})
		})
	}
	wg.Wait()
	if fatal == nil {
		fatal = ctx.Err()
	}
	if fatal != nil {
		return nil, fatal
	}
	return failed, nil
}

// pullOne pulls from source, loading what it sends as tables when the
// store can.
func (n *Node) pullOne(ctx context.Context, t *task, place *keyspace.Placement, g *guard, source string, skip []string) error {
	tc, err := n.newTableCopy(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", errLoad, err)
	}
	if tc == nil {
		return n.pull(ctx, t, place, g, nil, source, skip)
	}
	defer tc.close()
	if err := n.pull(ctx, t, place, g, tc, source, skip); err != nil {
		return err
	}
	if err := n.seal(ctx, place.Epoch(), g, tc); err != nil {
		return err
	}
	return tc.wait()
}

// pull copies from source what it exports to this node: through tc when
// there is one, otherwise op by op.
func (n *Node) pull(ctx context.Context, t *task, place *keyspace.Placement, g *guard, tc *tableCopy, source string, skip []string) error {
	l := place.Layout()
	base := l.URL(source)
	q := url.Values{}
	q.Set("epoch", strconv.FormatUint(place.Epoch(), 10))
	q.Set("dest", n.cfg.Name)
	if len(skip) > 0 {
		q.Set("skip", strings.Join(skip, ","))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+keyspace.PathExport+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if n.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+n.cfg.Token)
	}
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4*httperr.SnippetLen))
		return fmt.Errorf("export: %s: %s", resp.Status, httperr.Snippet(msg))
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var buf []byte
	for frame := 1; ; frame++ {
		size, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("export cut short before frame %d: %w", frame, err)
		}
		if size == 0 {
			return nil
		}
		if size > frameLimit {
			return fmt.Errorf("export frame %d of %d bytes, limit %d", frame, size, frameLimit)
		}
		buf = slices.Grow(buf[:0], int(size))[:size]
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("export cut short in frame %d: %w", frame, err)
		}
		b, err := keyspace.DecodeBatch(buf)
		if err != nil {
			return fmt.Errorf("export frame %d: %w", frame, err)
		}
		keys, err := n.applyCopied(ctx, place.Epoch(), g, tc, b.Ops)
		t.add(keys)
		if err != nil {
			return fmt.Errorf("export frame %d: %w", frame, err)
		}
		if n.copyHook != nil {
			n.copyHook(source, frame)
		}
		if tc != nil && tc.ld.Len() >= n.cfg.CopyTableKeys {
			if err := n.seal(ctx, place.Epoch(), g, tc); err != nil {
				return err
			}
		}
	}
}

// applyCopied applies the ops of one export frame through the guard and
// returns how many multihashes it put; with tc, the Puts go to its load
// (their records at once, their entries at its next commit).
func (n *Node) applyCopied(ctx context.Context, epoch uint64, g *guard, tc *tableCopy, ops []keyspace.Op) (int64, error) {
	n.applyMu.RLock()
	defer n.applyMu.RUnlock()
	if n.Layout().Epoch != epoch {
		return 0, errMovedOn
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var keys int64
	for i := range ops {
		op := ops[i]
		switch op.Kind {
		case keyspace.OpPutProvider:
			if g.skipRecord(op.Provider.AddrInfo.ID) {
				continue
			}
		case keyspace.OpPut:
			var ok bool
			if op, ok = g.filterPut(op); !ok {
				continue
			}
		default:
			return keys, fmt.Errorf("op %d: %s in an export", i, op.Kind)
		}
		var err error
		if tc != nil && op.Kind == keyspace.OpPut {
			if tc.ld.Len() == 0 {
				tc.from = len(g.rms)
			}
			err = tc.ld.Put(ctx, op.Value, op.Multihashes...)
		} else {
			err = op.Apply(ctx, n.cfg.Store)
		}
		if err != nil {
			return keys, fmt.Errorf("op %d (%s): %w", i, op.Kind, err)
		}
		keys += int64(len(op.Multihashes))
	}
	return keys, nil
}

// ambiguous reports whether mh may be the digest-prefix form
// ([store.IndexKey]) of a longer multihash that the ring places elsewhere:
// a function a prefix-keyed store cuts to 20 bytes but whose ring position
// is not its digest's first bytes. Where such a key belongs cannot be told
// from the form, so an export sends it to every gaining node and a drop
// keeps it.
func ambiguous(mh multihash.Multihash) bool {
	code, n := binary.Uvarint(mh)
	if n <= 0 {
		return false
	}
	size, k := binary.Uvarint(mh[n:])
	if k <= 0 || size != store.DigestPrefixLen {
		return false
	}
	switch code {
	case 0x20, 0x1013, 0x1014, 0x1015: // sha2-384, sha2-224, sha2-512/224, sha2-512/256
		return true
	}
	return false
}

func (n *Node) serveExport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	epoch, err := strconv.ParseUint(q.Get("epoch"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, keyspace.BatchAnswer{Error: "querynode: export: bad epoch parameter: " + err.Error()})
		return
	}
	n.mu.Lock()
	place, self := n.place, n.self
	n.mu.Unlock()
	if epoch != place.Epoch() {
		writeJSON(w, http.StatusConflict, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: export of epoch %d, node at epoch %d", epoch, place.Epoch())})
		return
	}
	l := place.Layout()
	if l.Phase != keyspace.PhaseCopy || self < 0 {
		writeJSON(w, http.StatusConflict, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: export of epoch %d: node %q is not a source in phase %s", epoch, n.cfg.Name, l.Phase)})
		return
	}
	dest := place.Node(q.Get("dest"))
	if dest < 0 || !slices.Contains(l.Next, q.Get("dest")) {
		writeJSON(w, http.StatusBadRequest, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: export: dest %q is not on the next ring", q.Get("dest"))})
		return
	}
	var skip []int
	if s := q.Get("skip"); s != "" {
		for _, name := range strings.Split(s, ",") {
			i := place.Node(name)
			if i < 0 {
				writeJSON(w, http.StatusBadRequest, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: export: skip names unknown node %q", name)})
				return
			}
			skip = append(skip, i)
		}
	}
	skipFn := func(i int) bool { return slices.Contains(skip, i) }
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if gaining := gainingNodes(place); len(gaining) > 1 && slices.Contains(gaining, dest) {
		// Several nodes gain (a leave): one scan for them all, spooled.
		sp, serr := n.spoolFor(place, self, gaining, skip, skipFn)
		if err = serr; err == nil {
			err = sp.stream(r.Context(), w, q.Get("dest"))
		}
	} else {
		fw := &frameWriter{w: bufio.NewWriterSize(w, 256<<10), name: n.cfg.Name, epoch: epoch, idx: map[string]int{}}
		err = n.export(r.Context(), place, self, []int{dest}, []*frameWriter{fw}, skipFn)
	}
	if err != nil {
		n.log.Warn("export cut short", "dest", q.Get("dest"), "err", err)
		return // no end frame: the reader knows the stream is incomplete
	}
}

// gainingNodes returns the nodes of place that gain keys in its change.
func gainingNodes(place *keyspace.Placement) []int {
	l := place.Layout()
	var out []int
	for _, name := range l.Next {
		if gainsKeys(&l, name) {
			out = append(out, place.Node(name))
		}
	}
	return out
}

// export scans the store once and writes to fws[i] the stream of what
// dests[i] gains from this node (self), with the nodes skip reports not
// counted as sources.
func (n *Node) export(ctx context.Context, place *keyspace.Placement, self int, dests []int, fws []*frameWriter, skip func(int) bool) error {
	n.scans.Add(1)
	st := n.cfg.Store
	for info, err := range st.Providers(ctx) {
		if err != nil {
			return err
		}
		if err := info.Validate(); err != nil {
			n.log.Warn("export skips an invalid provider record", "provider", info.AddrInfo.ID, "err", err)
			continue
		}
		for _, fw := range fws {
			if err := fw.addProvider(info); err != nil {
				return err
			}
		}
	}
	for _, fw := range fws {
		if err := fw.flush(); err != nil {
			return err
		}
	}
	keys := make([]int64, len(fws))
	// Each destination's segments of the ring decide the keys placed by
	// their digest (see exportRanges); the placement decides the others.
	ranges := make([]*exportRanges, len(dests))
	for i, d := range dests {
		ranges[i] = newExportRanges(place, self, []int{d}, skip)
	}
	entries := st.All(ctx)
	if sk, ok := st.(store.SeekScanner); ok {
		all := ranges[0]
		if len(dests) > 1 {
			all = newExportRanges(place, self, dests, skip)
		}
		entries = sk.AllSeek(ctx, all.seek)
	}
	for e, err := range entries {
		if err != nil {
			return err
		}
		pos, byPos := positional(e.Multihash)
		amb, source := ambiguous(e.Multihash), -2
		for i, dest := range dests {
			if byPos {
				if !ranges[i].contains(pos) {
					continue
				}
			} else if !amb {
				if !place.Gains(dest, e.Multihash) {
					continue
				}
				if source == -2 {
					source = place.Source(e.Multihash, skip)
				}
				if source != self {
					continue
				}
			}
			fw := fws[i]
			mh := fw.keep(e.Multihash)
			for _, v := range e.Values {
				if err := fw.addPut(v, mh); err != nil {
					return err
				}
			}
			keys[i]++
			if fw.keys >= frameMaxKeys || fw.bytes >= frameMaxBytes {
				if err := fw.flush(); err != nil {
					return err
				}
			}
		}
	}
	for i, fw := range fws {
		if err := fw.flush(); err != nil {
			return err
		}
		if err := fw.end(); err != nil {
			return err
		}
		n.log.Info("export complete", "dest", place.Layout().Nodes[dests[i]].Name, "keys", keys[i])
	}
	return nil
}

// frameWriter writes an export stream: frames of Put ops grouped by value.
type frameWriter struct {
	w     *bufio.Writer
	name  string
	epoch uint64
	seq   uint64
	ops   []keyspace.Op
	idx   map[string]int // value -> index in ops
	// byMem finds a value by where its bytes lie, before idx by what
	// they are: a scan yields one record's value from the same memory
	// for each of its keys (the store's cache), and comparing three
	// pointers and lengths costs less than building and hashing the
	// bytes. Equal memory means equal bytes; equal bytes elsewhere fall
	// through to idx.
	byMem map[valueMem]int
	// lists are the multihash slices of earlier frames' ops, by op
	// index, reused so that a value's list does not grow from nothing in
	// every frame.
	lists [][]multihash.Multihash
	keys  int
	bytes int
	buf   []byte
	mhs   []byte // the frame's multihashes, back to back
	kb    []byte // scratch for idx keys
	// onFrame, if set, is called after each frame is written (a spool
	// publishes it).
	onFrame func() error
}

// keep copies mh into the frame's memory, which lasts until the frame is
// written.
func (fw *frameWriter) keep(mh multihash.Multihash) multihash.Multihash {
	if cap(fw.mhs)-len(fw.mhs) < len(mh) {
		// A new block: the frame's earlier multihashes keep the old one.
		fw.mhs = make([]byte, 0, max(256<<10, len(mh)))
	}
	n := len(fw.mhs)
	fw.mhs = append(fw.mhs, mh...)
	return fw.mhs[n:len(fw.mhs):len(fw.mhs)]
}

func (fw *frameWriter) addProvider(info store.ProviderInfo) error {
	fw.ops = append(fw.ops, keyspace.Op{Kind: keyspace.OpPutProvider, Provider: &info})
	fw.bytes += 256
	if fw.bytes >= frameMaxBytes {
		return fw.flush()
	}
	return nil
}

// valueMem is where a value's bytes lie (see frameWriter.byMem).
type valueMem struct {
	p, c, m    unsafe.Pointer
	pn, cn, mn int
}

func memOf(v *store.Value) valueMem {
	return valueMem{
		p: unsafe.Pointer(unsafe.StringData(string(v.ProviderID))), pn: len(v.ProviderID),
		c: unsafe.Pointer(unsafe.SliceData(v.ContextID)), cn: len(v.ContextID),
		m: unsafe.Pointer(unsafe.SliceData(v.Metadata)), mn: len(v.Metadata),
	}
}

func (fw *frameWriter) addPut(v store.Value, mh multihash.Multihash) error {
	if fw.byMem == nil {
		fw.byMem = map[valueMem]int{}
	}
	mem := memOf(&v)
	if i, ok := fw.byMem[mem]; ok {
		fw.ops[i].Multihashes = append(fw.ops[i].Multihashes, mh)
		fw.keys++
		fw.bytes += len(mh) + 1
		return nil
	}
	kb := binary.AppendUvarint(fw.kb[:0], uint64(len(v.ProviderID)))
	kb = append(kb, v.ProviderID...)
	kb = binary.AppendUvarint(kb, uint64(len(v.ContextID)))
	kb = append(kb, v.ContextID...)
	kb = append(kb, v.Metadata...)
	fw.kb = kb
	i, ok := fw.idx[string(kb)]
	if !ok {
		i = len(fw.ops)
		k := string(kb)
		fw.idx[k] = i
		op := keyspace.Op{Kind: keyspace.OpPut, Value: v.Clone()}
		if i < len(fw.lists) {
			op.Multihashes = fw.lists[i][:0]
		}
		fw.ops = append(fw.ops, op)
		fw.bytes += len(k) + 8
	}
	fw.byMem[mem] = i
	fw.ops[i].Multihashes = append(fw.ops[i].Multihashes, mh)
	fw.keys++
	fw.bytes += len(mh) + 1
	return nil
}

func (fw *frameWriter) flush() error {
	if len(fw.ops) == 0 {
		return nil
	}

	fw.seq++
	b := keyspace.Batch{Writer: fw.name, Epoch: fw.epoch, Seq: fw.seq, Ops: fw.ops}
	var err error
	if fw.buf, err = b.AppendBinary(fw.buf[:0]); err != nil {
		return err
	}
	var hdr [binary.MaxVarintLen64]byte
	if _, err := fw.w.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(fw.buf)))]); err != nil {
		return err
	}
	if _, err := fw.w.Write(fw.buf); err != nil {
		return err
	}
	for i, op := range fw.ops {
		if cap(op.Multihashes) == 0 {
			continue
		}
		for len(fw.lists) <= i {
			fw.lists = append(fw.lists, nil)
		}
		clear(op.Multihashes) // the frame's memory goes with the frame
		fw.lists[i] = op.Multihashes[:0]
	}
	fw.ops = fw.ops[:0]
	clear(fw.idx)
	clear(fw.byMem)
	fw.keys, fw.bytes = 0, 0
	if fw.onFrame != nil {
		return fw.onFrame()
	}
	return nil
}

func (fw *frameWriter) end() error {
	if err := fw.w.WriteByte(0); err != nil {
		return err
	}
	if err := fw.w.Flush(); err != nil {
		return err
	}
	if fw.onFrame != nil {
		return fw.onFrame()
	}
	return nil
}
