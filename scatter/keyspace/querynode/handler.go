package querynode

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/indexkit/indexkit/internal/localonly"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// Handler returns the node's write API: [keyspace.PathBatch],
// [keyspace.PathStatus], [keyspace.PathExport], [keyspace.PathCopy] and
// [keyspace.PathDrop]. Mount it beside the find API (wrapped in
// [Node.GateFind]).
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+keyspace.PathBatch, n.guarded(n.serveBatch))
	mux.HandleFunc("GET "+keyspace.PathStatus, n.serveStatus)
	mux.HandleFunc("GET "+keyspace.PathExport, n.guarded(n.serveExport))
	mux.HandleFunc("POST "+keyspace.PathCopy, n.guarded(n.serveCopy))
	mux.HandleFunc("POST "+keyspace.PathDrop, n.guarded(n.serveDrop))
	return mux
}

// guarded checks the token (without one, the Host and the browser
// headers) and counts the request in flight.
func (n *Node) guarded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := n.local.Check(r); err != nil {
			var ref *localonly.Refusal
			errors.As(err, &ref)
			n.log.Info("write request refused", "method", r.Method, "path", r.URL.Path, "status", ref.Status, "err", err)
			writeJSON(w, ref.Status, keyspace.BatchAnswer{Error: "querynode: " + ref.Reason})
			return
		}
		if n.auth != nil && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), n.auth) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="indexkit shard"`)
			writeJSON(w, http.StatusUnauthorized, keyspace.BatchAnswer{Error: "querynode: missing or wrong bearer token"})
			return
		}
		if !n.enter() {
			writeJSON(w, http.StatusServiceUnavailable, keyspace.BatchAnswer{Error: ErrClosed.Error()})
			return
		}
		defer n.inflight.Done()
		// Close stops what is in flight: an export streams as long as
		// it has keys, and a batch cut short is not acknowledged.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(n.closing, cancel)()
		h(w, r.WithContext(ctx))
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (n *Node) serveStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Status())
}

func (n *Node) serveBatch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, n.cfg.MaxBatchBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeJSON(w, http.StatusRequestEntityTooLarge, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: batch larger than %d bytes", n.cfg.MaxBatchBytes)})
			return
		}
		writeJSON(w, http.StatusBadRequest, keyspace.BatchAnswer{Error: "querynode: read batch: " + err.Error()})
		return
	}
	b, err := keyspace.DecodeBatch(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, keyspace.BatchAnswer{Error: err.Error()})
		return
	}
	code, ans := n.applyBatch(r.Context(), &b, len(body))
	if code != http.StatusOK {
		n.log.Warn("batch refused", "writer", b.Writer, "seq", b.Seq, "status", code, "err", ans.Error)
	}
	writeJSON(w, code, ans)
}

// applyBatch applies b once and in order; see the package documentation.
func (n *Node) applyBatch(ctx context.Context, b *keyspace.Batch, size int) (int, keyspace.BatchAnswer) {
	n.applyMu.RLock()
	defer n.applyMu.RUnlock()
	n.mu.Lock()
	epoch, g := n.layout.Epoch, n.guard
	ws := n.writers[b.Writer]
	if ws == nil {
		ws = &writer{}
		n.writers[b.Writer] = ws
	}
	n.mu.Unlock()

	ws.mu.Lock()
	defer ws.mu.Unlock()
	defer func() {
		n.mu.Lock()
		ws.view = ws.pos
		n.mu.Unlock()
	}()
	if b.Epoch > epoch {
		// Routed under a layout this node has not adopted: applying it
		// now could bypass the copy guard of that layout. The writer
		// retries once the node has reloaded its layout.
		return http.StatusServiceUnavailable, keyspace.BatchAnswer{Applied: ws.pos.Applied, Durable: ws.durable.Load(),
			Error: fmt.Sprintf("querynode: batch of epoch %d, node at epoch %d: retry once the node has loaded the newer layout", b.Epoch, epoch)}
	}
	if b.Stream == 0 {
		// The writer holds no queue for this node: nothing waits for it
		// there, whatever stream the node last had from it.
		if len(b.Ops) > 0 {
			return http.StatusBadRequest, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: batch %d of writer %q has ops and no stream", b.Seq, b.Writer)}
		}
		if b.Drained {
			n.mu.Lock()
			ws.heard = true
			n.mu.Unlock()
		}
		return http.StatusOK, keyspace.BatchAnswer{}
	}
	if b.Stream != ws.pos.Stream {
		// The writer's queue for this node is new (its outbox was
		// recreated, or the node left the layout and came back): number
		// its batches afresh.
		n.log.Info("writer stream reset", "writer", b.Writer, "stream", b.Stream, "old_stream", ws.pos.Stream, "old_applied", ws.pos.Applied)
		pos := keyspace.WriterPosition{Stream: b.Stream}
		ws.smu.Lock()
		err := saveWriter(n.cfg.Dir, b.Writer, pos)
		if err == nil {
			ws.stream = b.Stream
			ws.applied.Store(0)
			ws.durable.Store(0)
		}
		ws.smu.Unlock()
		if err != nil {
			return http.StatusInternalServerError, keyspace.BatchAnswer{Applied: ws.pos.Applied, Durable: ws.durable.Load(), Error: err.Error()}
		}
		ws.pos = pos
	}
	switch {
	case b.Seq <= ws.pos.Applied:
		// A replay: applied before.
	case len(b.Ops) == 0 || b.Seq > ws.pos.Applied+1:
		// A heartbeat ahead of the node, or a gap: something was not
		// delivered.
		return http.StatusConflict, keyspace.BatchAnswer{Applied: ws.pos.Applied, Durable: ws.durable.Load(),
			Error: fmt.Sprintf("querynode: batch %d of writer %q, expected %d", b.Seq, b.Writer, ws.pos.Applied+1)}
	default:
		if err := n.apply(ctx, g, b.Ops); err != nil {
			return http.StatusInternalServerError, keyspace.BatchAnswer{Applied: ws.pos.Applied, Durable: ws.durable.Load(), Error: err.Error()}
		}
		ws.pos.Applied = b.Seq
		ws.applied.Store(b.Seq)
		if n.cfg.CommitInterval <= 0 {
			// No group commit: durable before it is answered.
			if err := n.commit(ctx); err != nil {
				return http.StatusInternalServerError, keyspace.BatchAnswer{Applied: ws.pos.Applied, Durable: ws.durable.Load(), Error: err.Error()}
			}
		} else if n.pending.Add(int64(size)) >= n.cfg.CommitBytes {
			select {
			case n.commitNow <- struct{}{}:
			default:
			}
		}
	}
	ws.pos.Drained = b.Drained && b.Seq == ws.pos.Applied
	if ws.pos.Drained {
		n.mu.Lock()
		ws.heard = true
		n.mu.Unlock()
	}
	return http.StatusOK, keyspace.BatchAnswer{Applied: ws.pos.Applied, Durable: ws.durable.Load()}
}

// apply applies ops to the store, through the guard g when there is one
// (whose record it syncs); a commit makes them durable.
func (n *Node) apply(ctx context.Context, g *guard, ops []keyspace.Op) error {
	if g != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
	}
	st := n.cfg.Store
	for i := range ops {
		op := &ops[i]
		if g != nil {
			g.observe(op)
		}
		if err := op.Apply(ctx, st); err != nil {
			// An update of a context this node holds no multihash of: the
			// writer sends context-wide operations to every node.
			if op.Kind == keyspace.OpUpdateMetadata && errors.Is(err, store.ErrNotFound) {
				continue
			}
			return fmt.Errorf("querynode: op %d (%s): %w", i, op.Kind, err)
		}
	}
	if g != nil {
		if err := g.sync(); err != nil {
			return err
		}
	}
	return nil
}

// epochRequest is the body of a copy or drop request.
type epochRequest struct {
	Epoch uint64
}

func readEpoch(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	var req epochRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, keyspace.BatchAnswer{Error: "querynode: want {\"Epoch\": n}: " + err.Error()})
		return 0, false
	}
	return req.Epoch, true
}

func (n *Node) serveCopy(w http.ResponseWriter, r *http.Request) {
	epoch, ok := readEpoch(w, r)
	if !ok {
		return
	}
	n.mu.Lock()
	l := n.layout
	switch {
	case epoch != l.Epoch:
		n.mu.Unlock()
		writeJSON(w, http.StatusConflict, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: copy of epoch %d, node at epoch %d", epoch, l.Epoch)})
		return
	case !gainsKeys(&l, n.cfg.Name):
		n.mu.Unlock()
		writeJSON(w, http.StatusConflict, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: node %q gains no keys in epoch %d (phase %s)", n.cfg.Name, epoch, l.Phase)})
		return
	}
	if t := n.copyTask; t != nil && t.epoch() == epoch {
		if s := t.snapshot(); !s.Done || s.Error == "" {
			n.mu.Unlock()
			writeJSON(w, http.StatusOK, s)
			return
		}
	}
	place, g := n.place, n.guard
	t := newTask(epoch, func(ctx context.Context, t *task) error { return n.copy(ctx, t, place, g) }, n.cfg.OnTaskEnd)
	if n.copyTask != nil {
		n.copyTask.cancel()
	}
	n.copyTask = t
	n.mu.Unlock()
	n.poke()
	writeJSON(w, http.StatusAccepted, t.snapshot())
}

func (n *Node) serveDrop(w http.ResponseWriter, r *http.Request) {
	epoch, ok := readEpoch(w, r)
	if !ok {
		return
	}
	n.mu.Lock()
	l := n.layout
	if epoch != l.Epoch || l.Phase != keyspace.PhaseStable {
		n.mu.Unlock()
		writeJSON(w, http.StatusConflict, keyspace.BatchAnswer{Error: fmt.Sprintf("querynode: drop of epoch %d, node at epoch %d (phase %s); a drop needs a stable layout", epoch, l.Epoch, l.Phase)})
		return
	}
	if t := n.dropTask; t != nil && t.epoch() == epoch {
		if s := t.snapshot(); !s.Done || s.Error == "" {
			n.mu.Unlock()
			writeJSON(w, http.StatusOK, s)
			return
		}
	}
	place, self := n.place, n.self
	t := newTask(epoch, func(ctx context.Context, t *task) error { return n.drop(ctx, t, place, self) }, n.cfg.OnTaskEnd)
	if n.dropTask != nil {
		n.dropTask.cancel()
	}
	n.dropTask = t
	n.mu.Unlock()
	n.poke()
	writeJSON(w, http.StatusAccepted, t.snapshot())
}

func (n *Node) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}
