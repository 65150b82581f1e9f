package handoff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// MaxRequestSize bounds the body of a handoff request that
// [DecodeRequest] reads; a real one is about 150 bytes.
const MaxRequestSize = 64 << 10

// Request asks an indexer to take over a publisher from a frozen indexer.
// It is the body of POST /ingest/handoff/{publisher}, in JSON
// {"FrozenID":"<peer ID>","FrozenURL":"<find URL>"}, as the reference
// assigner sends it.
type Request struct {
	// FrozenID is the peer ID of the frozen indexer. It is persisted as
	// the assignment's Continued.
	FrozenID peer.ID
	// FrozenURL is the base URL of the frozen indexer's find API, whose
	// GET /providers lists its provider records. A URL without a scheme
	// gets http://, as the reference assigner adds it to its configured
	// URLs.
	FrozenURL string
}

// Validate reports whether r can be acted on: a well-formed FrozenID and
// an absolute http or https FrozenURL. Errors wrap [ErrInvalidRequest].
func (r Request) Validate() error {
	if r.FrozenID == "" {
		return fmt.Errorf("%w: empty FrozenID", ErrInvalidRequest)
	}
	if err := r.FrozenID.Validate(); err != nil {
		return fmt.Errorf("%w: FrozenID: %v", ErrInvalidRequest, err)
	}
	if _, err := r.providersURL(); err != nil {
		return err
	}
	return nil
}

// providersURL returns FrozenURL's /providers endpoint, keeping any path
// prefix of FrozenURL.
func (r Request) providersURL() (string, error) {
	s := strings.TrimSpace(r.FrozenURL)
	if s == "" {
		return "", fmt.Errorf("%w: empty FrozenURL", ErrInvalidRequest)
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: FrozenURL: %v", ErrInvalidRequest, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: FrozenURL %q: want an http or https URL with a host", ErrInvalidRequest, r.FrozenURL)
	}
	u.RawQuery, u.Fragment = "", ""
	return u.JoinPath("providers").String(), nil
}

// MarshalJSON encodes r as the reference assigner does.
func (r Request) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		FrozenID  string
		FrozenURL string
	}{r.FrozenID.String(), r.FrozenURL})
}

// DecodeRequest reads a handoff request body, as the admin handler of an
// indexer receives it: JSON, at most [MaxRequestSize] bytes, whatever the
// Content-Type (the reference assigner sends none). It returns an error
// wrapping [ErrInvalidRequest] for an empty, oversize or malformed body or
// an invalid request (see [Request.Validate]).
func DecodeRequest(body io.Reader) (Request, error) {
	if body == nil {
		return Request{}, fmt.Errorf("%w: no body", ErrInvalidRequest)
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxRequestSize+1))
	switch {
	case err != nil:
		return Request{}, fmt.Errorf("%w: reading body: %v", ErrInvalidRequest, err)
	case len(data) > MaxRequestSize:
		return Request{}, fmt.Errorf("%w: body larger than %d bytes", ErrInvalidRequest, MaxRequestSize)
	case len(bytes.TrimSpace(data)) == 0:
		return Request{}, fmt.Errorf("%w: no body", ErrInvalidRequest)
	}
	var raw struct {
		FrozenID  string
		FrozenURL string
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	id, err := peer.Decode(raw.FrozenID)
	if err != nil {
		return Request{}, fmt.Errorf("%w: FrozenID %q: %v", ErrInvalidRequest, raw.FrozenID, err)
	}
	r := Request{FrozenID: id, FrozenURL: raw.FrozenURL}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}
