package publishernode

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/piece"
)

// Truth is a publisher's ground truth at its head: what an indexer that
// has ingested its chain up to that head holds for it, and nothing else.
// A faulty publisher's expected index is empty.
type Truth struct {
	// Publisher is the publisher's peer ID, which is also the provider of
	// every value.
	Publisher string
	// Head is the CID of the head it serves ("" before the first ad).
	Head string
	// Ads is the number of ads up to the head.
	Ads int
	// Fault is the publisher's fault, "" for an honest one.
	Fault Fault `json:",omitempty"`
	// Multihashes is the number of multihashes that have a value.
	Multihashes int
	// Digest is [Digest] of Entries (whether they are listed or not).
	Digest string
	// Entries are every multihash with its values, sorted by multihash;
	// listed only when asked for (GET /truth?entries=1).
	Entries []Entry `json:",omitempty"`
	// RemovedMultihashes is the number of multihashes advertised up to
	// the head that have no value left: every context that held them has
	// been removed (IsRm). A multihash that lost some contexts but not all
	// is not removed: it is in Entries with its remaining values.
	RemovedMultihashes int `json:",omitempty"`
	// Removed lists removed multihashes (base58btc), sorted by multihash:
	// an indexer that applied every removal answers none of them (the
	// find API's 404). All of them up to [MaxRemoved]; beyond, a
	// deterministic sample of MaxRemoved, evenly spaced in that order.
	// Listed only with Entries (GET /truth?entries=1).
	Removed []string `json:",omitempty"`
	// Pieces are the Filecoin pieces its ads name, with their payloads
	// (see [Publisher.Pieces]); listed only when asked for (GET
	// /truth?pieces=1). A faulty publisher lists none.
	Pieces []Piece `json:",omitempty"`
}

// MaxRemoved bounds [Truth.Removed], so that a check that asks for every
// removed multihash costs at most this many queries per publisher.
const MaxRemoved = 4096

// Piece is one Filecoin piece of a publisher's ground truth: what a piece
// sampler (package piece) that has walked the chain up to the head answers
// for GET /sample/{Provider}/{Piece}: samples chosen among Payloads.
type Piece struct {
	Provider string // peer ID: the publisher, provider of every ad
	Piece    string // piece CID (fil-commitment-unsealed, baga…)
	// InContextID: the ad names the piece in its ContextID (as Curio
	// does, [Spec.PieceContextEvery]); otherwise in its graphsync metadata.
	InContextID bool `json:",omitempty"`
	// Payloads are the payload CIDs (piece.PayloadCID of each multihash
	// advertised under the piece), in the order advertised.
	Payloads []string
}

// Entry is one multihash of a [Truth] with its values.
type Entry struct {
	Multihash string  // base58btc, as the find API writes it
	Values    []Value // in the order their contexts were first advertised
}

// Value is one (provider, context, metadata) of an [Entry]. In JSON the
// byte fields are base64, as the find API writes them.
type Value struct {
	ProviderID string
	ContextID  []byte
	Metadata   []byte
}

// Model returns the ground truth at the head as a chaingen model, for
// chaingen.Model.Equal against an indexer's store (in process). For a
// faulty publisher it is the empty model.
func (p *Publisher) Model() *chaingen.Model {
	n := p.Ads()
	if p.spec.Fault != Honest {
		n = 0
	}
	return p.chain.ModelAt(n - 1)
}

// Truth returns the ground truth at the head; with entries, every
// multihash and its values too, and the removed multihashes (up to
// [MaxRemoved]). A faulty publisher has neither: nothing it publishes is
// indexed, so nothing of it is removed either.
func (p *Publisher) Truth(entries bool) Truth {
	p.mu.RLock()
	n, head := p.published, p.head
	mhs := p.mhs // append-only: the first len(mhs) stay as they are
	p.mu.RUnlock()
	t := Truth{Publisher: p.ID().String(), Ads: n, Fault: p.spec.Fault}
	if head.Defined() {
		t.Head = head.String()
	}
	var (
		es      []Entry
		removed []multihash.Multihash
	)
	if p.spec.Fault == Honest {
		m := p.chain.ModelAt(n - 1)
		// Sorted by the multihash's bytes, not by its base58 string.
		sorted := slices.SortedFunc(slices.Values(mhs), func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
		provider := p.ID().String()
		for _, mh := range sorted {
			vs := m.Values(mh)
			if len(vs) == 0 {
				removed = append(removed, mh) // advertised, every context removed
				continue
			}
			e := Entry{Multihash: mh.B58String(), Values: make([]Value, len(vs))}
			for i, v := range vs {
				id := provider
				if v.ProviderID != p.ID() {
					id = v.ProviderID.String()
				}
				e.Values[i] = Value{ProviderID: id, ContextID: v.ContextID, Metadata: v.Metadata}
			}
			es = append(es, e)
		}
	}
	t.Multihashes = len(es)
	t.Digest = Digest(es)
	t.RemovedMultihashes = len(removed)
	if entries {
		t.Entries = es
		for _, mh := range sample(removed, MaxRemoved) {
			t.Removed = append(t.Removed, mh.B58String())
		}
	}
	return t
}

// sample returns s if it has at most n elements, otherwise n of them
// evenly spaced (the first included), in their order: deterministic for a
// given s.
func sample[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	out := make([]T, n)
	for i := range out {
		out[i] = s[i*len(s)/n]
	}
	return out
}

// Pieces returns the Filecoin pieces the ads up to the head name, with
// their payloads, in the order the pieces were first advertised: the
// ground truth of a piece sampler (chaingen.Chain.Pieces). Removals do not
// remove payloads (pieces are immutable). A faulty publisher has none: no
// sampler may accept its ads.
func (p *Publisher) Pieces() []Piece {
	if p.spec.Fault != Honest {
		return nil
	}
	p.pubMu.Lock() // the chain holds no ad beyond the head
	byPiece, _ := p.chain.Pieces()
	inContext := map[cid.Cid]bool{}
	if p.spec.PieceContextEvery > 0 {
		for i := range p.chain.Len() {
			if ad, err := p.chain.Ad(i); err == nil {
				if pc, ok := piece.PieceFromContextID(ad.ContextID); ok {
					inContext[pc] = true
				}
			}
		}
	}
	p.pubMu.Unlock()
	p.mu.RLock()
	first := make(map[cid.Cid]int, len(byPiece))
	for pc, mhs := range byPiece {
		first[pc] = p.seen[string(mhs[0])]
	}
	p.mu.RUnlock()
	out := make([]Piece, 0, len(byPiece))
	provider := p.ID().String()
	for pc, mhs := range byPiece {
		pp := Piece{Provider: provider, Piece: pc.String(), InContextID: inContext[pc], Payloads: make([]string, 0, len(mhs))}
		for _, mh := range mhs {
			if c, ok := piece.PayloadCID(mh); ok {
				pp.Payloads = append(pp.Payloads, c.String())
			}
		}
		out = append(out, pp)
	}
	slices.SortFunc(out, func(a, b Piece) int {
		return cmp.Compare(first[cid.MustParse(a.Piece)], first[cid.MustParse(b.Piece)])
	})
	return out
}

func mhBytes(s string) []byte {
	mh, _ := multihash.FromB58String(s)
	return mh
}

// Digest returns the hex SHA-256 of entries as lines
// "<multihash> <provider> <base64 context> <base64 metadata>\n", one per
// value, sorted: the same for the same set of (multihash, value) pairs
// whatever their order. A test that has read an index back (through a find
// API, say) compares its Digest with the publisher's.
func Digest(entries []Entry) string {
	var lines []string
	b64 := base64.StdEncoding
	for _, e := range entries {
		for _, v := range e.Values {
			lines = append(lines, e.Multihash+" "+v.ProviderID+" "+b64.EncodeToString(v.ContextID)+" "+b64.EncodeToString(v.Metadata)+"\n")
		}
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// serveTruth answers GET /truth: the Truth as JSON, with every entry when
// the query has entries=1 (or true), every piece when it has pieces=1.
func (p *Publisher) serveTruth(w http.ResponseWriter, r *http.Request) {
	entries, _ := strconv.ParseBool(r.URL.Query().Get("entries"))
	pieces, _ := strconv.ParseBool(r.URL.Query().Get("pieces"))
	t := p.Truth(entries)
	if pieces {
		t.Pieces = p.Pieces()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(t)
}
