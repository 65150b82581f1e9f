package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/internal/httperr"
)

// Client calls the admin API of one indexer, as the assigner does. It
// speaks to a [NewHandler] handler and to a reference (storetheindex)
// indexer alike. Its methods are safe for concurrent use; bound each call
// with its context.
//
// A call the node answers with an unexpected status returns a
// *[StatusError] naming the method, URL and status, which wraps the
// sentinel the answer stands for: errors.Is(err, [ErrAlreadyAssigned])
// and so on. The sentinel comes from the [ErrorHeader] code, or, from a
// node that sends none (the reference), from the route and status as the
// reference means them (see the package documentation).
type Client struct {
	base *url.URL
	cfg  clientConfig
}

// NewClient returns a client of the admin API at baseURL, such as
// "http://127.0.0.1:3002" ("http://" is added when there is no scheme,
// as the reference assigner does). A path in baseURL is kept as a prefix
// of every route. An option given a value out of range fails it with
// [ErrInvalidOption].
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	raw := baseURL
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("admin: bad base URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("admin: bad base URL %q: want http or https with a host", baseURL)
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	c := &Client{base: u, cfg: defaultClientConfig()}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c.cfg); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// String returns the base URL, userinfo redacted.
func (c *Client) String() string { return c.base.Redacted() }

// The calls below come in the order a reference assigner makes them: at
// startup GET /ingest/assigned, GET /status, GET /ingest/preferred (the
// last skipped for a frozen node); then POST /ingest/assign/{id} per new
// assignment; GET /status per poll; POST /ingest/handoff/{id} per
// publisher of a frozen node.

// Assigned calls GET /ingest/assigned: the node's assigned publishers,
// each with the frozen node it continues, if any. A 204 gives an empty
// list.
func (c *Client) Assigned(ctx context.Context) ([]Assignment, error) {
	var wire []struct{ Publisher, Continued string }
	if err := c.call(ctx, opAssigned, http.MethodGet, nil, nil, &wire, "ingest", "assigned"); err != nil {
		return nil, err
	}
	list := make([]Assignment, 0, len(wire))
	for _, a := range wire {
		var err error
		var asg Assignment
		if asg.Publisher, err = peer.Decode(a.Publisher); err != nil {
			return nil, c.decodeError(http.MethodGet, "ingest/assigned", fmt.Errorf("bad Publisher %q: %w", clip(a.Publisher), err))
		}
		if a.Continued != "" {
			if asg.Continued, err = peer.Decode(a.Continued); err != nil {
				return nil, c.decodeError(http.MethodGet, "ingest/assigned", fmt.Errorf("bad Continued %q: %w", clip(a.Continued), err))
			}
		}
		list = append(list, asg)
	}
	return list, nil
}

// Status calls GET /status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	if err := c.call(ctx, opStatus, http.MethodGet, nil, nil, &st, "status"); err != nil {
		return Status{}, err
	}
	if st.ID == "" {
		return Status{}, c.decodeError(http.MethodGet, "status", errors.New("no ID"))
	}
	return st, nil
}

// Preferred calls GET /ingest/preferred: publishers the node holds data
// for without being assigned them. A 204 gives an empty list.
func (c *Client) Preferred(ctx context.Context) ([]peer.ID, error) {
	var list []peer.ID
	if err := c.call(ctx, opPreferred, http.MethodGet, nil, nil, &list, "ingest", "preferred"); err != nil {
		return nil, err
	}
	return list, nil
}

// Assign calls POST /ingest/assign/{publisher}. The reference assigner
// then sends the announce that triggered the assignment to the node's
// ingest listener (PUT /ingest/announce, CBOR): that is the
// ingest/announce sender's job, not this client's.
func (c *Client) Assign(ctx context.Context, publisher peer.ID) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("admin: assign: %w", err)
	}
	return c.call(ctx, opAssign, http.MethodPost, nil, nil, nil, "ingest", "assign", publisher.String())
}

// Handoff calls POST /ingest/handoff/{publisher} with
// {"FrozenID","FrozenURL"}: the node takes publisher over from the frozen
// node, continuing after its last advertisement.
func (c *Client) Handoff(ctx context.Context, publisher peer.ID, req HandoffRequest) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("admin: handoff: %w", err)
	}
	if err := req.FrozenID.Validate(); err != nil {
		return fmt.Errorf("admin: handoff: FrozenID: %w", err)
	}
	if err := checkFrozenURL(req.FrozenURL); err != nil {
		return fmt.Errorf("admin: handoff: %w", err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("admin: handoff: %w", err)
	}
	return c.call(ctx, opHandoff, http.MethodPost, nil, body, nil, "ingest", "handoff", publisher.String())
}

// Unassign calls PUT /ingest/unassign/{publisher}.
func (c *Client) Unassign(ctx context.Context, publisher peer.ID) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("admin: unassign: %w", err)
	}
	return c.call(ctx, opUnassign, http.MethodPut, nil, nil, nil, "ingest", "unassign", publisher.String())
}

// Freeze calls PUT /freeze.
func (c *Client) Freeze(ctx context.Context) error {
	return c.call(ctx, opFreeze, http.MethodPut, nil, nil, nil, "freeze")
}

// Sync calls POST /ingest/sync/{publisher}?depth=&resync= with the
// address, if any, as a JSON string body, as the reference client does
// (depth only when not 0, resync only when true). The node answers 202 and
// syncs in the background.
func (c *Client) Sync(ctx context.Context, publisher peer.ID, req SyncRequest) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("admin: sync: %w", err)
	}
	q := url.Values{}
	if req.Depth != 0 {
		q.Set("depth", strconv.Itoa(req.Depth))
	}
	if req.Resync {
		q.Set("resync", "true")
	}
	var body []byte
	if len(req.Addr) != 0 {
		var err error
		if body, err = json.Marshal(req.Addr.String()); err != nil {
			return fmt.Errorf("admin: sync: %w", err)
		}
	}
	return c.call(ctx, opSync, http.MethodPost, q, body, nil, "ingest", "sync", publisher.String())
}

// IngestStatus calls GET /ingest/status page by page
// ([MaxIngestStatusLimit] publishers per page, each request after the
// last publisher of the one before, see [Client.IngestStatusPage]) and
// returns every publisher, sorted by its string form. A node that does
// not paginate (an older indexkit node) answers everything at once, which
// is taken as the only page. A reference node answers 404, returned as
// [ErrNotSupported]. Bound the whole walk with ctx.
func (c *Client) IngestStatus(ctx context.Context) ([]PublisherStatus, error) {
	var all []PublisherStatus
	var after peer.ID
	for {
		list, next, err := c.IngestStatusPage(ctx, after, MaxIngestStatusLimit)
		if err != nil {
			return nil, err
		}
		all = append(all, list...)
		if next == "" {
			return all, nil
		}
		after = next
	}
}

// IngestStatusPage calls GET /ingest/status?limit=&after=: at most limit
// publishers (1 to [MaxIngestStatusLimit]; 0 for the node's default,
// [DefaultIngestStatusLimit]) that sort after the publisher after (""
// for the first page), in order. next is the cursor of the next page, the
// after of the next call, or "" when this page is the last; it comes from
// the answer's Link header (rel="next"). An empty page (204) has no next.
// A next that sorts before an entry of the page, or not after after, is
// a decoding error: following it would skip entries or page forever.
func (c *Client) IngestStatusPage(ctx context.Context, after peer.ID, limit int) (list []PublisherStatus, next peer.ID, err error) {
	if limit < 0 || limit > MaxIngestStatusLimit {
		return nil, "", fmt.Errorf("admin: ingest status: limit %d: want 0 to %d", limit, MaxIngestStatusLimit)
	}
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if after != "" {
		q.Set("after", after.String())
	}
	hdr, err := c.callHeader(ctx, opIngestStatus, http.MethodGet, q, nil, &list, "ingest", "status")
	if err != nil {
		return nil, "", err
	}
	next, err = nextCursor(hdr)
	if err != nil {
		return nil, "", c.decodeError(http.MethodGet, "ingest/status", err)
	}
	if next == "" {
		return list, "", nil
	}
	// The handler's next is the last publisher of the page: the walk
	// advances, and no entry is skipped.
	ns := next.String()
	advance := len(list) > 0 && (after == "" || ns > after.String())
	for _, ps := range list {
		advance = advance && ps.Publisher.String() <= ns
	}
	if !advance {
		return nil, "", c.decodeError(http.MethodGet, "ingest/status",
			fmt.Errorf("next page after %s: does not follow the %d entries of the page after %q", next, len(list), after))
	}
	return list, next, nil
}

// nextCursor reads the after parameter of the rel="next" target of the
// Link header, "" when there is none.
func nextCursor(hdr http.Header) (peer.ID, error) {
	for _, v := range hdr.Values("Link") {
		for link := range strings.SplitSeq(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			isNext := false
			for p := range strings.SplitSeq(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "rel") && slices.Contains(strings.Fields(strings.Trim(v, `"`)), "next") {
					isNext = true
				}
			}
			if !isNext {
				continue
			}
			u, err := url.Parse(target[1 : len(target)-1])
			if err != nil {
				return "", fmt.Errorf("bad Link %q: %w", clip(link), err)
			}
			s := u.Query().Get("after")
			if s == "" {
				return "", fmt.Errorf("bad Link %q: no after parameter", clip(link))
			}
			id, err := peer.Decode(s)
			if err != nil {
				return "", fmt.Errorf("bad Link %q: after: %w", clip(link), err)
			}
			return id, nil
		}
	}
	return "", nil
}

// op names a call, for mapping a status without ErrorHeader.
type op int

const (
	opAssigned op = iota
	opStatus
	opPreferred
	opAssign
	opHandoff
	opUnassign
	opFreeze
	opSync
	opIngestStatus
)

// fallback maps the status of an answer without ErrorHeader to the
// sentinel the reference means by it on that route, or nil.
func fallback(o op, status int) error {
	switch status {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrNotAllowed
	case http.StatusNotImplemented:
		return ErrNotSupported
	case http.StatusRequestEntityTooLarge:
		return ErrBadRequest
	}
	switch o {
	case opAssign, opHandoff:
		switch status {
		case http.StatusBadRequest:
			return ErrAlreadyAssigned // the reference's only 400 for a well-formed request
		case http.StatusServiceUnavailable:
			return ErrNoAssigner
		}
	case opUnassign:
		switch status {
		case http.StatusNotFound:
			return ErrNotAssigned
		case http.StatusServiceUnavailable:
			return ErrNoAssigner
		}
	case opFreeze:
		if status == http.StatusBadRequest {
			return ErrDisabled
		}
	case opSync:
		if status == http.StatusConflict {
			return ErrSyncing
		}
	case opIngestStatus:
		if status == http.StatusNotFound {
			return ErrNotSupported
		}
	}
	if status == http.StatusServiceUnavailable {
		return ErrUnavailable
	}
	return nil
}

// maxErrorMessage bounds what is read of an error answer to quote its
// start in a StatusError (httperr.Snippet).
const maxErrorMessage = 1024

// call makes one request and decodes a 200 JSON answer into out (when out
// is not nil). Any 2xx is success; 204 leaves out untouched.
func (c *Client) call(ctx context.Context, o op, method string, q url.Values, body []byte, out any, elem ...string) error {
	_, err := c.callHeader(ctx, o, method, q, body, out, elem...)
	return err
}

// callHeader is call that also returns the headers of a 2xx answer.
func (c *Client) callHeader(ctx context.Context, o op, method string, q url.Values, body []byte, out any, elem ...string) (http.Header, error) {
	u := c.base.JoinPath(elem...)
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("admin: %s %s: %w", method, u.Redacted(), err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if out != nil {
		req.Header.Set("Accept", "application/json")
	}
	if c.cfg.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.token)
	}
	resp, err := c.cfg.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin: %s %s: %w", method, u.Redacted(), err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorMessage))
		sentinel := sentinelForCode(resp.Header.Get(ErrorHeader))
		if sentinel == nil && resp.Header.Get(ErrorHeader) == "" {
			sentinel = fallback(o, resp.StatusCode)
		}
		return nil, &StatusError{
			Client: "admin",
			Method: method,
			URL:    u.Redacted(),
			Code:   resp.StatusCode,
			Body:   httperr.Snippet(msg),
			Err:    sentinel,
		}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.Header, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("admin: %s %s: reading response: %w", method, u.Redacted(), err)
	}
	if int64(len(data)) > c.cfg.maxBody {
		return nil, fmt.Errorf("admin: %s %s: response body larger than %d bytes", method, u.Redacted(), c.cfg.maxBody)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("admin: %s %s: decoding response: %w", method, u.Redacted(), httperr.DecodeError(err, data))
	}
	return resp.Header, nil
}

func (c *Client) decodeError(method, path string, err error) error {
	return fmt.Errorf("admin: %s %s: decoding response: %w", method, c.base.JoinPath(path).Redacted(), err)
}
