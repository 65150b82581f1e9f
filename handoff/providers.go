package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/internal/httperr"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
)

// frozenRecord is one provider record of the frozen indexer for the
// publisher being handed off.
type frozenRecord struct {
	info         store.ProviderInfo // what the receiver registers
	frozenAt     cid.Cid
	frozenAtTime time.Time // zero if absent or unparsable
}

// fetchProviders GETs url (a frozen indexer's /providers) and returns the
// records published by publisher, in the order the frozen indexer lists
// them. The answer is decoded as a stream, one record at a time, so only
// the publisher's records are held; its size is bounded by limit.
func fetchProviders(ctx context.Context, hc *http.Client, log *slog.Logger, url string, publisher peer.ID, limit int64) ([]frozenRecord, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrInvalidRequest, url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrFrozenIndexer, url, withCtxErr(ctx, err))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent: // nothing listed
		return nil, nil
	default:
		// The answer's body goes to the debug log only: the error reaches
		// the admin API's caller, and the FrozenURL is the caller's choice.
		if log.Enabled(ctx, slog.LevelDebug) {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, snippetRead))
			log.Debug("frozen indexer's /providers failed", "url", url, "status", resp.StatusCode, "body", httperr.Snippet(msg))
		}
		return nil, fmt.Errorf("%w: %w", ErrFrozenIndexer, &StatusError{Method: http.MethodGet, URL: url, Code: resp.StatusCode})
	}
	var body io.Reader = &limitReader{r: resp.Body, n: limit}
	var start *headReader // the answer's start, for the debug log
	if log.Enabled(ctx, slog.LevelDebug) {
		start = &headReader{r: body}
		body = start
	}
	recs, err := decodeProviders(body, publisher)
	if err != nil && start != nil {
		log.Debug("frozen indexer's /providers answer not read", "url", url, "err", err, "body", httperr.Snippet(start.head))
	}
	if err != nil {
		switch {
		case errors.Is(err, ErrTooLarge):
			return nil, fmt.Errorf("handoff: GET %s: %w: more than %d bytes", url, ErrTooLarge, limit)
		case errors.Is(err, errRead):
			return nil, fmt.Errorf("%w: GET %s: reading answer: %w", ErrFrozenIndexer, url, withCtxErr(ctx, err))
		default:
			return nil, fmt.Errorf("%w: GET %s: %w", ErrInvalidProviders, url, err)
		}
	}
	return recs, nil
}

// errRead marks a failure of the body's reader (not of its content).
var errRead = errors.New("read failed")

// decodeProviders reads a GET /providers answer (find's model, through
// find.ProviderRecords) and keeps the records published by publisher.
func decodeProviders(r io.Reader, publisher peer.ID) ([]frozenRecord, error) {
	rr := &readErrReader{r: r}
	wrap := func(err error) error {
		if rr.err != nil {
			return rr.err
		}
		return err
	}
	want := publisher.String()
	var recs []frozenRecord
	i := 0
	for raw, err := range find.ProviderRecords(rr) {
		if err != nil {
			return nil, wrap(err)
		}
		// A record is decoded in full only if it names the publisher, so a
		// record of another publisher that this package cannot decode (an
		// odd address, say) does not fail the handoff.
		var peek struct{ Publisher *struct{ ID string } }
		if err := json.Unmarshal(raw, &peek); err != nil {
			return nil, fmt.Errorf("decoding provider record %d: %w", i, httperr.JSONError(err))
		}
		if peek.Publisher != nil && samePeer(peek.Publisher.ID, want, publisher) {
			var pi find.ProviderInfo
			if err := json.Unmarshal(raw, &pi); err != nil {
				return nil, fmt.Errorf("decoding provider record %d: %w", i, httperr.JSONError(err))
			}
			rec, err := frozenRecordOf(&pi)
			if err != nil {
				return nil, fmt.Errorf("provider record %d: %w", i, err)
			}
			recs = append(recs, rec)
		}
		i++
	}
	return recs, nil
}

// samePeer reports whether the peer ID string s names id, whose base58
// string is b58 (the form the reference writes); other forms (a CIDv1) are
// decoded.
func samePeer(s, b58 string, id peer.ID) bool {
	if s == b58 {
		return true
	}
	got, err := peer.Decode(s)
	return err == nil && got == id
}

// frozenRecordOf converts pi to what the receiver registers: AddrInfo,
// Publisher and ExtendedProviders; not LastAdvertisement, LastError nor
// the frozen fields, which describe the frozen indexer's ingestion, not
// this one's. pi.Publisher is not nil.
func frozenRecordOf(pi *find.ProviderInfo) (frozenRecord, error) {
	info := store.ProviderInfo{AddrInfo: pi.AddrInfo, Publisher: *pi.Publisher}
	if x := pi.ExtendedProviders; x != nil {
		ep := &store.ExtendedProviders{Providers: x.Providers, Metadatas: x.Metadatas}
		for _, c := range x.Contextual {
			ep.Contextual = append(ep.Contextual, store.ContextualExtendedProviders{
				Override:  c.Override,
				ContextID: []byte(c.ContextID),
				Providers: c.Providers,
				Metadatas: c.Metadatas,
			})
		}
		info.ExtendedProviders = ep
	}
	if err := info.Validate(); err != nil {
		return frozenRecord{}, err
	}
	rec := frozenRecord{info: info, frozenAt: pi.FrozenAt}
	if pi.FrozenAtTime != "" {
		rec.frozenAtTime, _ = time.Parse(time.RFC3339Nano, pi.FrozenAtTime) // unparsable: zero, the oldest
	}
	return rec, nil
}

// limitReader reads at most n bytes from r and fails with ErrTooLarge if r
// holds more.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var probe [1]byte
		k, err := l.r.Read(probe[:])
		if k > 0 {
			return 0, ErrTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// snippetRead is what is read of an answer to quote its start in the
// debug log.
const snippetRead = 4 * httperr.SnippetLen

// headReader keeps the first snippetRead bytes read through it.
type headReader struct {
	r    io.Reader
	head []byte
}

func (h *headReader) Read(p []byte) (int, error) {
	k, err := h.r.Read(p)
	if n := min(k, snippetRead-len(h.head)); n > 0 {
		h.head = append(h.head, p[:n]...)
	}
	return k, err
}

// readErrReader remembers the reader's error other than io.EOF, so that
// decodeProviders tells a broken connection or an oversize answer from a
// malformed one.
type readErrReader struct {
	r   io.Reader
	err error
}

func (rr *readErrReader) Read(p []byte) (int, error) {
	k, err := rr.r.Read(p)
	if err != nil && err != io.EOF && rr.err == nil {
		if errors.Is(err, ErrTooLarge) {
			rr.err = err
		} else {
			rr.err = fmt.Errorf("%w: %w", errRead, err)
		}
	}
	return k, err
}

// withCtxErr adds ctx's error to err when ctx is done, so that callers
// see context.DeadlineExceeded or context.Canceled with errors.Is.
func withCtxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}
