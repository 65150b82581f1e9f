package handoff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// maxErrorBody bounds the part of an error answer a [Client] reads.
const maxErrorBody = 4 << 10

// ClientOption configures a [Client] ([NewClient]).
type ClientOption func(*Client) error

// WithClientHTTP sets the HTTP client (default: a client with
// [DefaultTimeout]).
func WithClientHTTP(hc *http.Client) ClientOption {
	return func(c *Client) error {
		if hc == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrInvalidOption)
		}
		c.hc = hc
		return nil
	}
}

// WithClientToken sends "Authorization: Bearer <token>", for an admin API
// protected by a token.
func WithClientToken(token string) ClientOption {
	return func(c *Client) error {
		if token == "" || strings.ContainsAny(token, "\r\n") {
			return fmt.Errorf("%w: empty or multi-line bearer token", ErrInvalidOption)
		}
		c.token = token
		return nil
	}
}

// Client asks indexers to take publishers over from frozen ones: the
// assigner's side of a handoff. It is safe for concurrent use.
type Client struct {
	hc    *http.Client
	token string
}

// NewClient returns a Client.
func NewClient(opts ...ClientOption) (*Client, error) {
	c := &Client{hc: &http.Client{Timeout: DefaultTimeout}}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Handoff asks the indexer whose admin API is at adminURL to take
// publisher over from the frozen indexer req names: POST
// {adminURL}/ingest/handoff/{publisher} with the JSON body
// {"FrozenID","FrozenURL"}, as the reference assigner sends it (plus a
// Content-Type: application/json, which indexers ignore). An adminURL
// without a scheme gets http://.
//
// It returns nil on 200. Any other status is a [*StatusError] that
// unwraps to the sentinel the answer stands for, found in this order:
//
//   - the Indexkit-Error header of an indexkit admin API
//     (assigner/admin.ErrorHeader): already-assigned, frozen,
//     unknown-publisher, not-allowed, no-assigner and unavailable,
//     bad-request, unknown-indexer, bad-frozen-at give
//     [ErrAlreadyAssigned], [ErrFrozen], [ErrUnknownPublisher],
//     [ErrNotAllowed], [ErrUnavailable], [ErrInvalidRequest],
//     [ErrUnknownIndexer], [ErrBadFrozenAt];
//   - the text of a sentinel of this package in the body (the admin API
//     answers a failure to read the frozen indexer or to reach the
//     publisher with the error's text: [ErrFrozenIndexer],
//     [ErrInvalidProviders], [ErrTooLarge], [ErrPublisherUnreachable]);
//   - the status, as the reference means it on this route: 400
//     [ErrAlreadyAssigned] (its only 400 for a well-formed request), 403
//     [ErrNotAllowed], 503 [ErrUnavailable];
//   - anything else: [ErrServer].
//
// A transport failure wraps the context's error when ctx is done.
func (c *Client) Handoff(ctx context.Context, adminURL string, publisher peer.ID, req Request) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("%w: publisher: %v", ErrInvalidRequest, err)
	}
	if err := req.Validate(); err != nil {
		return err
	}
	u, err := adminEndpoint(adminURL, "ingest", "handoff", publisher.String())
	if err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("handoff: encode request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("handoff: POST %s: %w", u, withCtxErr(ctx, err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	text := strings.TrimSpace(string(msg))
	return &StatusError{URL: u, Code: resp.StatusCode, Body: text, err: statusSentinel(resp.StatusCode, resp.Header.Get(errorHeader), text)}
}

// errorHeader is the response header in which an indexkit admin API
// names the sentinel behind an error answer (assigner/admin.ErrorHeader;
// this package may not import assigner, so the wire names are repeated
// here).
const errorHeader = "Indexkit-Error"

// headerCodes maps the errorHeader codes of a handoff answer to sentinels.
var headerCodes = map[string]error{
	"already-assigned":  ErrAlreadyAssigned,
	"frozen":            ErrFrozen,
	"unknown-publisher": ErrUnknownPublisher,
	"not-allowed":       ErrNotAllowed,
	"no-assigner":       ErrUnavailable,
	"unavailable":       ErrUnavailable,
	"bad-request":       ErrInvalidRequest,
	"unknown-indexer":   ErrUnknownIndexer,
	"bad-frozen-at":     ErrBadFrozenAt,
}

// bodyErrors are the sentinels an answer's body may carry as text.
var bodyErrors = []error{ErrFrozenIndexer, ErrInvalidProviders, ErrTooLarge, ErrPublisherUnreachable}

func statusSentinel(code int, header, body string) error {
	if e := headerCodes[header]; e != nil {
		return e
	}
	for _, e := range bodyErrors {
		if strings.Contains(body, e.Error()) {
			return e
		}
	}
	switch code {
	case http.StatusBadRequest:
		return ErrAlreadyAssigned
	case http.StatusForbidden:
		return ErrNotAllowed
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	default:
		return ErrServer
	}
}

// adminEndpoint joins path elements to an admin base URL.
func adminEndpoint(base string, elem ...string) (string, error) {
	s := strings.TrimSpace(base)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: admin URL %q: want an http or https URL with a host", ErrInvalidRequest, base)
	}
	u.RawQuery, u.Fragment = "", ""
	return u.JoinPath(elem...).String(), nil
}
