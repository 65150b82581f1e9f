package sample

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

const (
	// Prefix is where the sampling API lives; [Handler] serves the paths
	// under it.
	Prefix = "/ipni/v0/sample/"

	// MaxPath is the longest escaped path after [Prefix] a request may
	// have; a longer one is refused with 400 before anything is decoded.
	MaxPath = 1024

	// MaxBeacon is the longest beacon, in bytes.
	MaxBeacon = 32

	// MaxSamples is the largest max a request may ask for, and
	// DefaultSamples what it gets without one (the spec's bounds).
	MaxSamples     = 10
	DefaultSamples = 1
)

// Request is a parsed sampling request.
type Request struct {
	Provider  peer.ID
	ContextID []byte
	// Beacon is the beacon as given (1 to MaxBeacon bytes), or nil when
	// the request has none.
	Beacon []byte
	// Max is how many multihashes to return at most: 1 to MaxSamples.
	Max int
}

// ParseRequest parses the escaped path after [Prefix]
// ("{provider-id}/{context-id}") and the query of a sampling request. The
// provider ID is a peer ID in any form peer.Decode takes. The context ID
// is base64, standard (as the spec says) or URL-safe, padded or not; it is
// everything after the first '/', so a standard-base64 '/' may be sent
// raw or as %2F ('+' is taken literally, as paths do). The query may have
// beacon (hex, 1 to 32 bytes), max (1 to 10, default 1) and
// federation_epoch (0, the only epoch the spec accepts); other parameters
// are ignored. Every error names the part that is wrong.
func ParseRequest(escapedPath string, query url.Values) (Request, error) {
	var req Request
	if len(escapedPath) > MaxPath {
		return req, fmt.Errorf("path of %d bytes after %s, limit %d", len(escapedPath), Prefix, MaxPath)
	}
	rawPeer, rawCtx, ok := strings.Cut(escapedPath, "/")
	if !ok || rawPeer == "" {
		return req, fmt.Errorf("want %s{provider-id}/{context-id}", Prefix)
	}
	p, err := url.PathUnescape(rawPeer)
	if err != nil {
		return req, fmt.Errorf("bad provider ID %q: %v", truncate(rawPeer), err)
	}
	if req.Provider, err = peer.Decode(p); err != nil {
		return req, fmt.Errorf("bad provider ID %q: %v", truncate(p), err)
	}
	c, err := url.PathUnescape(rawCtx)
	if err != nil {
		return req, fmt.Errorf("bad context ID %q: %v", truncate(rawCtx), err)
	}
	if c == "" {
		return req, fmt.Errorf("missing context ID: want %s{provider-id}/{context-id}", Prefix)
	}
	if req.ContextID, err = decodeBase64(c); err != nil {
		return req, fmt.Errorf("bad context ID %q: %v", truncate(c), err)
	}
	if len(req.ContextID) > store.MaxContextIDLen {
		return req, fmt.Errorf("bad context ID: %d bytes, limit %d", len(req.ContextID), store.MaxContextIDLen)
	}
	req.Max = DefaultSamples
	if query.Has("beacon") {
		b := query.Get("beacon")
		if req.Beacon, err = hex.DecodeString(b); err != nil {
			return req, fmt.Errorf("bad beacon %q: not hex: %v", truncate(b), err)
		}
		if len(req.Beacon) == 0 || len(req.Beacon) > MaxBeacon {
			return req, fmt.Errorf("bad beacon: %d bytes, want 1 to %d", len(req.Beacon), MaxBeacon)
		}
	}
	if query.Has("max") {
		m := query.Get("max")
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 || n > MaxSamples {
			return req, fmt.Errorf("bad max %q: want an integer from 1 to %d", truncate(m), MaxSamples)
		}
		req.Max = n
	}
	if query.Has("federation_epoch") {
		if e := query.Get("federation_epoch"); e != "0" {
			return req, fmt.Errorf("bad federation_epoch %q: only 0 is accepted", truncate(e))
		}
	}
	return req, nil
}

// decodeBase64 decodes standard or URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		if strings.ContainsAny(s, "+/") {
			return nil, fmt.Errorf("mixes the standard (+/) and URL-safe (-_) base64 alphabets")
		}
		enc = base64.RawURLEncoding
	}
	t := strings.TrimRight(s, "=")
	if len(s)-len(t) > 2 || (len(s) != len(t) && len(s)%4 != 0) {
		return nil, fmt.Errorf("bad base64 padding")
	}
	s = t
	b, err := enc.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %v", err)
	}
	return b, nil
}

func truncate(s string) string {
	const n = 100
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Seed returns the PCG seed of beacon as the spec derives it: the beacon,
// padded with zeros to 32 bytes, is split into two 16-byte halves, and the
// least significant 8 bytes of each half, read as big-endian numbers, are
// the high and the low seed. (xedni, the spec's reference service, splits
// a short beacon in the middle and reads the first 8 bytes of each half
// little-endian; for a 32-byte beacon the two differ too. This package
// follows the spec's text.)
func Seed(beacon []byte) (hi, lo uint64) {
	var b [32]byte
	copy(b[:], beacon)
	return binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[24:32])
}

// Pick returns min(max, n) distinct indices below n drawn, in order, from a
// PCG seeded with [Seed] of beacon: the spec's "initialize the PCG with the
// beacon and select indices below the population size", repeats skipped.
func Pick(beacon []byte, n, max int) []int {
	k := min(n, max)
	if k <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(Seed(beacon)))
	seen := make(map[int]bool, k)
	out := make([]int, 0, k)
	for len(out) < k {
		i := r.IntN(n)
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}
