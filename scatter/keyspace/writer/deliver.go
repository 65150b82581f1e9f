package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/internal/httperr"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// maxAnswer bounds the answer to a batch read into memory.
const maxAnswer = 64 << 10

// Run delivers the outbox to the query nodes until ctx ends: one loop per
// query node of the layout, each sending the oldest unacknowledged batch,
// retrying with backoff until the node acknowledges it, and sending a
// heartbeat when nothing waits. It follows layout changes. It returns
// after every goroutine it started has exited.
func (w *Writer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	loops := map[string]context.CancelFunc{}
	defer func() {
		for _, stop := range loops {
			stop()
		}
	}()
	for {
		w.mu.Lock()
		nodes, changed := w.place.Nodes(), w.changed
		w.mu.Unlock()
		want := map[string]bool{}
		for _, n := range nodes {
			want[n.Name] = true
			if loops[n.Name] == nil {
				lctx, stop := context.WithCancel(ctx)
				loops[n.Name] = stop
				wg.Add(1)
				go func(name string) {
					defer wg.Done()
					w.deliverLoop(lctx, name)
				}(n.Name)
			}
		}
		for name, stop := range loops {
			if !want[name] {
				stop()
				delete(loops, name)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

func (w *Writer) url(dest string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.place.Layout()
	return l.URL(dest)
}

func (w *Writer) deliverLoop(ctx context.Context, dest string) {
	ob := w.cfg.Outbox
	backoff := w.cfg.MinBackoff
	lastBeat := time.Time{}
	// sent is the last batch of stream the node has applied, as far as
	// this loop knows: batches after it are sent; those up to it stay in
	// the outbox until the node says they are durable. stream is the
	// stream of dest's queue: 0 while it has none; a new one when the
	// queue was removed (dest left the layout) and created again (it
	// came back), whose Seqs start at 1.
	var sent, stream uint64
	for ctx.Err() == nil {
		st := ob.Status(dest)
		if st.Stream != stream {
			stream, sent = st.Stream, 0
		}
		sent = max(sent, st.Acked)
		recs, err := ob.Peek(dest, sent, 1, w.cfg.BatchBytes*2)
		if err == nil && len(recs) > 0 && recs[0].Stream != stream {
			continue // the queue was replaced since Status: look again
		}
		if err == nil && len(recs) == 0 {
			// Nothing to send. A heartbeat now and then, so that the node
			// knows it is not behind; and more often while batches it
			// applied wait to be durable, to learn when they are.
			every := w.cfg.Heartbeat
			if st.Acked < st.Head {
				every = min(every, durablePoll)
			}
			if time.Since(lastBeat) >= every {
				var ans keyspace.BatchAnswer
				// Without a queue (stream 0), it says nothing ever waited
				// for the node in this outbox.
				ans, err = w.send(ctx, dest, keyspace.Batch{Stream: stream, Epoch: w.Layout().Epoch, Seq: st.Head, Drained: true}, nil, st.Head)
				if err == nil {
					lastBeat = time.Now()
				} else if ans.Applied < sent && ans.Applied >= st.Acked {
					sent = ans.Applied // the node restarted without what it had not made durable
					backoff = w.cfg.MinBackoff
					continue
				}
			}
			if err == nil {
				wctx, cancel := context.WithTimeout(ctx, every)
				ob.Wait(wctx, dest, st.Head)
				cancel()
				backoff = w.cfg.MinBackoff
				continue
			}
		}
		if err == nil {
			r := recs[0]
			var ans keyspace.BatchAnswer
			ans, err = w.send(ctx, dest, keyspace.Batch{Stream: r.Stream, Epoch: r.Epoch, Seq: r.Seq, Drained: r.Seq == st.Head}, r.Payload, r.Seq)
			if err == nil {
				sent = max(sent, ans.Applied)
				lastBeat = time.Now()
				backoff = w.cfg.MinBackoff
				continue
			}
			if ans.Applied < sent && ans.Applied >= st.Acked {
				// The node restarted without what it had not made
				// durable: send again from what it has, at once.
				sent = ans.Applied
				backoff = w.cfg.MinBackoff
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		w.failed(dest, err)
		// Full jitter keeps a pool of writers from retrying in step.
		d := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		backoff = min(backoff*2, w.cfg.MaxBackoff)
	}
}

// durablePoll is how often a delivery loop asks a node that commits in
// groups whether the batches it applied are durable.
const durablePoll = 100 * time.Millisecond

// send posts one batch (payload: its ops section, nil for a heartbeat) of
// b.Stream and acknowledges it in the outbox, in that stream, when the
// node has made it durable.
func (w *Writer) send(ctx context.Context, dest string, b keyspace.Batch, payload []byte, seq uint64) (ans keyspace.BatchAnswer, err error) {
	// An answer that says nothing keeps the loop's position.
	ans.Applied = ^uint64(0)
	u := w.url(dest)
	if u == "" {
		return ans, fmt.Errorf("writer: %s is not in the layout", dest)
	}
	b.Writer = w.cfg.Name
	body, err := b.AppendHeader(make([]byte, 0, 64+len(payload)))
	if err != nil {
		return ans, err
	}
	if payload == nil {
		body = append(body, 0) // no ops
	} else {
		body = append(body, payload...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(u, "/")+keyspace.PathBatch, bytes.NewReader(body))
	if err != nil {
		return ans, fmt.Errorf("writer: batch to %s: %w", dest, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if w.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.Token)
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return ans, fmt.Errorf("writer: batch %d to %s: %w", seq, dest, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	var got keyspace.BatchAnswer
	jerr := json.Unmarshal(raw, &got)
	st := w.cfg.Outbox.Status(dest)
	switch {
	case st.Stream != b.Stream:
		// dest's queue was removed (and perhaps created again) while
		// the batch was in flight: the answer is about a stream this
		// outbox no longer holds. The loop starts over with the new one.
		return got, nil
	case resp.StatusCode == http.StatusOK && jerr == nil:
	case resp.StatusCode == http.StatusConflict && jerr == nil:
		if got.Applied < st.Acked {
			// The node has not applied batches this outbox no longer
			// holds: it lost writes it had made durable.
			return got, fmt.Errorf("writer: %s applied batches up to %d of stream %d, but made %d durable: it lost acknowledged writes and must copy its ranges again", dest, got.Applied, b.Stream, st.Acked)
		}
		// It restarted without what it had not made durable, or missed
		// a batch: the loop sends again from what it has.
		return got, fmt.Errorf("writer: %s expects batch %d, got %d", dest, got.Applied+1, seq)
	default:
		msg := httperr.Snippet(raw)
		if got.Error != "" {
			msg = httperr.Snippet([]byte(got.Error))
		}
		return ans, fmt.Errorf("writer: batch %d to %s: %s: %s", seq, dest, resp.Status, msg)
	}
	if d := min(got.Durable, st.Head); d > st.Acked {
		if err := w.cfg.Outbox.AckStream(dest, b.Stream, d); err != nil {
			return ans, fmt.Errorf("writer: ack %s: %w", dest, err)
		}
	}
	w.succeeded(dest)
	return got, nil
}

func (w *Writer) failed(dest string, err error) {
	w.dmu.Lock()
	s := w.dests[dest]
	if s == nil {
		s = &destState{}
		w.dests[dest] = s
	}
	s.failures++
	s.lastErr = err.Error()
	n := s.failures
	w.dmu.Unlock()
	if n == 1 || n%20 == 0 {
		w.log.Warn("delivery failed", "indexer", dest, "failures", n, "err", err)
	}
}

func (w *Writer) succeeded(dest string) {
	w.dmu.Lock()
	if s := w.dests[dest]; s != nil && s.failures > 0 {
		w.log.Info("delivery resumed", "indexer", dest, "after", s.failures)
		s.failures, s.lastErr = 0, ""
	}
	w.dmu.Unlock()
}

// Status reports the Writer's epoch and its outbox towards each query
// node.
func (w *Writer) Status() keyspace.Status {
	l := w.Layout()
	st := keyspace.Status{Role: keyspace.RoleIngest, Name: w.cfg.Name, Epoch: l.Epoch, Owners: map[string]keyspace.OutboxStatus{}}
	w.dmu.Lock()
	defer w.dmu.Unlock()
	for _, n := range l.Nodes {
		o := w.cfg.Outbox.Status(n.Name)
		os := keyspace.OutboxStatus{Pending: o.Pending, Bytes: o.Bytes, Head: o.Head, Acked: o.Acked, OldestEpoch: o.OldestEpoch}
		if s := w.dests[n.Name]; s != nil {
			os.LastError = s.lastErr
		}
		st.Owners[n.Name] = os
		if o.Pending > 0 && (st.OldestEpoch == 0 || o.OldestEpoch < st.OldestEpoch) {
			st.OldestEpoch = o.OldestEpoch
		}
	}
	return st
}

// Handler serves [keyspace.PathStatus].
func (w *Writer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+keyspace.PathStatus, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(w.Status())
	})
	return mux
}
