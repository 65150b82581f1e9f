package localpool

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/piece"
)

// Pieces returns the Filecoin pieces of every honest publisher's ground
// truth (GET /truth?pieces=1): each piece with its provider and payload
// CIDs, publisher by publisher, each's in the order first advertised.
func (p *Pool) Pieces(ctx context.Context) ([]publishernode.Piece, error) {
	var out []publishernode.Piece
	for i, u := range p.URLs().Publishers {
		var t publishernode.Truth
		if err := p.getJSON(ctx, u+"/truth?pieces=1", &t); err != nil {
			return out, fmt.Errorf("pieces of publisher-%d: %w", i, err)
		}
		out = append(out, t.Pieces...)
	}
	return out, nil
}

// PieceSample is one piece of the truth asked of the piece sampler: GET
// /sample/{provider}/{piece}?seed={seed}, its signature checked with
// piece.VerifySample.
type PieceSample struct {
	Provider, Piece, Seed string
	// URL is the request, ready for curl.
	URL string
	// Status is the HTTP status (0: no answer).
	Status int
	// Verified: the answer's signature verifies; Server is the signer.
	Verified bool
	Server   string `json:",omitempty"`
	// Samples are the payload CIDs answered; Code the signed error code
	// of a 404 (piece.CodePieceNotFound, ...).
	Samples []string `json:",omitempty"`
	Code    string   `json:",omitempty"`
	// InPiece: every sample is a payload of the piece in the truth.
	InPiece bool
	Err     string `json:",omitempty"`
}

// OK reports whether the sampler answered with samples, signed, all of
// them payloads of the piece.
func (s PieceSample) OK() bool { return s.Verified && len(s.Samples) > 0 && s.InPiece && s.Err == "" }

func (s PieceSample) String() string {
	switch {
	case s.Err != "":
		return "FAILED: " + s.Err
	case s.Code != "":
		return fmt.Sprintf("%d %s (signature verified: %v)", s.Status, s.Code, s.Verified)
	}
	return fmt.Sprintf("%d payloads, signature verified: %v, all in the piece: %v", len(s.Samples), s.Verified, s.InPiece)
}

// SampleURL is the piece sampler's URL for a sample of n payloads of pc
// with seed (n ≤ 0: the server's default, one).
func (p *Pool) SampleURL(pc publishernode.Piece, seed string, n int) string {
	u := p.URLs().Piece + "/sample/" + pc.Provider + "/" + pc.Piece + "?seed=" + url.QueryEscape(seed)
	if n > 0 {
		u += "&n=" + strconv.Itoa(n)
	}
	return u
}

// SamplePiece asks the piece sampler for a sample of n payloads of pc
// with seed (see [Pool.SampleURL]), verifies the answer's signature and
// checks that every sample is one of pc's payloads. Problems are reported
// in the result, not as an error.
func (p *Pool) SamplePiece(ctx context.Context, pc publishernode.Piece, seed string, n int) PieceSample {
	s := PieceSample{Provider: pc.Provider, Piece: pc.Piece, Seed: seed, URL: p.SampleURL(pc, seed, n)}
	provider, err := peer.Decode(pc.Provider)
	if err != nil {
		s.Err = fmt.Sprintf("provider %q: %v", pc.Provider, err)
		return s
	}
	pieceCID, err := cid.Decode(pc.Piece)
	if err != nil {
		s.Err = fmt.Sprintf("piece %q: %v", pc.Piece, err)
		return s
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	defer resp.Body.Close()
	s.Status = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		s.Err = fmt.Sprintf("GET %s: %v", s.URL, err)
		return s
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		s.Err = fmt.Sprintf("GET %s: %s", s.URL, resp.Status)
		return s
	}
	v, err := piece.VerifySample(body, provider, pieceCID, seed)
	if err != nil {
		s.Err = fmt.Sprintf("GET %s: %v", s.URL, err)
		return s
	}
	s.Verified, s.Server, s.Code = true, v.Server.String(), v.Error
	payloads := make(map[string]bool, len(pc.Payloads))
	for _, pl := range pc.Payloads {
		payloads[pl] = true
	}
	s.InPiece = len(v.Samples) > 0
	for _, c := range v.Samples {
		s.Samples = append(s.Samples, c.String())
		s.InPiece = s.InPiece && payloads[c.String()]
	}
	return s
}
