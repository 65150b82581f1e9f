package find

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/multiformats/go-multihash"
)

// findBatchWorkers is how many multihashes of one batch are looked up at once.
const findBatchWorkers = 8

// findBatchRequest is the body of POST /multihash.
type findBatchRequest struct {
	Multihashes []multihash.Multihash
}

// findBatch serves POST /multihash.
func (h *Handler) findBatch(w http.ResponseWriter, r *http.Request) {
	if _, ok := findNegotiate(w, r, false); !ok {
		return
	}
	var req findBatchRequest
	body := http.MaxBytesReader(w, r.Body, h.cfg.bodyLimit)
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("request body larger than %d bytes", h.cfg.bodyLimit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "bad request body: want {\"Multihashes\":[\"<base64>\",...]}: "+err.Error(), http.StatusBadRequest)
		return
	}
	switch n := len(req.Multihashes); {
	case n == 0:
		http.Error(w, "no multihashes in request", http.StatusBadRequest)
		return
	case n > h.cfg.batchLimit:
		http.Error(w, fmt.Sprintf("%d multihashes in request, limit %d", n, h.cfg.batchLimit), http.StatusRequestEntityTooLarge)
		return
	}
	seen := make(map[string]struct{}, len(req.Multihashes))
	mhs := req.Multihashes[:0]
	for i, mh := range req.Multihashes {
		if _, err := multihash.Decode(mh); err != nil {
			http.Error(w, fmt.Sprintf("bad multihash %d: %v", i, err), http.StatusBadRequest)
			return
		}
		if _, dup := seen[string(mh)]; dup {
			continue
		}
		seen[string(mh)] = struct{}{}
		mhs = append(mhs, mh)
	}

	results, errs := h.lookupAll(r.Context(), mhs)

	// The answer is complete only if every lookup ended without error. The
	// backends header reports the least-answered lookup; with nothing found,
	// 504 only if every failed lookup failed by timeouts alone.
	var worst *PartialError
	var other error
	allTimeouts := true
	for _, err := range errs {
		if err == nil {
			continue
		}
		pe, ok := errors.AsType[*PartialError](err)
		if !ok {
			other = err
			continue
		}
		if f := pe.Total - pe.Answered; f == 0 || pe.TimedOut != f {
			allTimeouts = false
		}
		if worst == nil || pe.Answered*worst.Total < worst.Answered*pe.Total {
			worst = pe
		}
	}
	found := 0
	for _, rs := range results {
		if len(rs) > 0 {
			found++
		}
	}
	if found == 0 {
		switch {
		case other != nil:
			h.internalError(w, r, other)
		case worst != nil:
			h.failedBackends(w, worst, allTimeouts)
		default:
			http.Error(w, "no results for query", http.StatusNotFound)
		}
		return
	}

	buf := append(make([]byte, 0, 4096), findResponsePrefix...)
	first := true
	for i, rs := range results {
		if len(rs) == 0 {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, mhResultPrefix...)
		buf = findAppendB64(buf, mhs[i])
		buf = append(buf, mhResultMiddle...)
		for j := range rs {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = h.addrs.appendResult(buf, &rs[j])
		}
		buf = append(buf, mhResultSuffix...)
	}
	buf = append(buf, findResponseSuffix...)
	hdr := w.Header()
	if worst != nil {
		h.markIncomplete(r, hdr, worst)
	} else if other != nil {
		h.markIncomplete(r, hdr, other)
	}
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
}

// lookupAll finds every multihash of mhs and returns the results and the
// final error of each, by index: in one call when the backend is a
// [BatchFinder], else with [FindEach]. It returns after every lookup has
// ended.
func (h *Handler) lookupAll(ctx context.Context, mhs []multihash.Multihash) ([][]ProviderResult, []error) {
	var answers []BatchResult
	if bf, ok := h.b.(BatchFinder); ok {
		answers = bf.FindBatch(ctx, mhs)
	} else {
		answers = FindEach(ctx, h.b, mhs)
	}
	results := make([][]ProviderResult, len(mhs))
	errs := make([]error, len(mhs))
	for i := range mhs {
		if i < len(answers) {
			results[i], errs[i] = answers[i].Results, answers[i].Err
		} else {
			errs[i] = fmt.Errorf("find: batch backend answered %d of %d multihashes", len(answers), len(mhs))
		}
	}
	return results, errs
}

// BatchFinder is the optional capability of a [Backend] that looks many
// multihashes up in one call: a [Client] sends them in one POST
// /multihash, and scatter's Gather with a ring splits them by owner. The
// [Handler] uses it for POST /multihash when its backend has it.
type BatchFinder interface {
	// FindBatch returns one BatchResult per multihash of mhs, by index,
	// once every lookup has ended. Each says what Find would have
	// yielded: the results, and the error that ended them (nil for a
	// complete answer; no results and no error is "not found").
	FindBatch(ctx context.Context, mhs []multihash.Multihash) []BatchResult
}

// BatchResult is the answer of a [BatchFinder] for one multihash.
type BatchResult struct {
	Results []ProviderResult
	// Err is what the lookup ended with, as the last value of a Find: the
	// results before it are real but may not be all there is.
	Err error
}

// FindEach looks every multihash of mhs up with b's Find, a few at a time,
// and returns their answers by index: what a [BatchFinder] does for a
// Backend that cannot do better. It returns after every lookup has ended.
func FindEach(ctx context.Context, b Backend, mhs []multihash.Multihash) []BatchResult {
	out := make([]BatchResult, len(mhs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(findBatchWorkers, len(mhs)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(mhs) {
					return
				}
				for pr, err := range b.Find(ctx, mhs[i]) {
					if err != nil {
						out[i].Err = err
						break
					}
					out[i].Results = append(out[i].Results, pr)
				}
			}
		})
	}
	wg.Wait()
	return out
}
