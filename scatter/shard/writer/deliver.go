package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/scatter/shard"
)

// maxBatchRecords bounds one request: the outbox's records are already
// batches of about BatchBytes, so a request carries one.
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
	for ctx.Err() == nil {
		st := ob.Status(dest)
		recs, err := ob.Peek(dest, st.Acked, 1, w.cfg.BatchBytes*2)
		if err == nil && len(recs) == 0 {
			// Nothing waits: a heartbeat now and then, so that the node
			// knows it is not behind.
			if time.Since(lastBeat) >= w.cfg.Heartbeat {
				err = w.send(ctx, dest, shard.Batch{Epoch: w.Layout().Epoch, Seq: st.Head, Drained: true}, nil, st.Head)
				if err == nil {
					lastBeat = time.Now()
				}
			}
			if err == nil {
				wctx, cancel := context.WithTimeout(ctx, w.cfg.Heartbeat)
				ob.Wait(wctx, dest, st.Head)
				cancel()
				backoff = w.cfg.MinBackoff
				continue
			}
		}
		if err == nil {
			r := recs[0]
			head := ob.Status(dest).Head
			err = w.send(ctx, dest, shard.Batch{Epoch: r.Epoch, Seq: r.Seq, Drained: r.Seq == head}, r.Payload, r.Seq)
			if err == nil {
				lastBeat = time.Now()
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

// send posts one batch (payload: its ops section, nil for a heartbeat)
// and acknowledges it in the outbox when the node has applied it.
func (w *Writer) send(ctx context.Context, dest string, b shard.Batch, payload []byte, seq uint64) error {
	u := w.url(dest)
	if u == "" {
		return fmt.Errorf("writer: %s is not in the layout", dest)
	}
	b.Writer, b.Stream = w.cfg.Name, w.cfg.Outbox.Stream()
	body, err := b.AppendHeader(make([]byte, 0, 64+len(payload)))
	if err != nil {
		return err
	}
	if payload == nil {
		body = append(body, 0) // no ops
	} else {
		body = append(body, payload...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(u, "/")+shard.PathBatch, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("writer: batch to %s: %w", dest, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if w.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.Token)
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("writer: batch %d to %s: %w", seq, dest, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	var ans shard.BatchAnswer
	jerr := json.Unmarshal(raw, &ans)
	switch {
	case resp.StatusCode == http.StatusOK && jerr == nil:
	case resp.StatusCode == http.StatusConflict && jerr == nil:
		if ans.Applied < seq {
			// The node has not applied batches this outbox no longer
			// holds: it lost data it had acknowledged.
			st := w.cfg.Outbox.Status(dest)
			if ans.Applied < st.Acked {
				return fmt.Errorf("writer: %s applied batches up to %d of stream %d, but acknowledged %d: it lost acknowledged writes and must copy its ranges again", dest, ans.Applied, b.Stream, st.Acked)
			}
			return fmt.Errorf("writer: %s expects batch %d, got %d", dest, ans.Applied+1, seq)
		}
	default:
		msg := strings.TrimSpace(string(raw))
		if ans.Error != "" {
			msg = ans.Error
		}
		return fmt.Errorf("writer: batch %d to %s: %s: %s", seq, dest, resp.Status, msg)
	}
	if payload != nil || ans.Applied > w.cfg.Outbox.Status(dest).Acked {
		if err := w.cfg.Outbox.Ack(dest, min(ans.Applied, w.cfg.Outbox.Status(dest).Head)); err != nil {
			return fmt.Errorf("writer: ack %s: %w", dest, err)
		}
	}
	w.succeeded(dest)
	return nil
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
func (w *Writer) Status() shard.Status {
	l := w.Layout()
	st := shard.Status{Role: "ingest", Name: w.cfg.Name, Epoch: l.Epoch, Owners: map[string]shard.OutboxStatus{}}
	w.dmu.Lock()
	defer w.dmu.Unlock()
	for _, n := range l.Nodes {
		o := w.cfg.Outbox.Status(n.Name)
		os := shard.OutboxStatus{Pending: o.Pending, Bytes: o.Bytes, Head: o.Head, Acked: o.Acked, OldestEpoch: o.OldestEpoch}
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

// Handler serves [shard.PathStatus].
func (w *Writer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+shard.PathStatus, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(w.Status())
	})
	return mux
}

var errNotDelivered = errors.New("writer: not delivered")
