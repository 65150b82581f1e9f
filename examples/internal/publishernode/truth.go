package publishernode

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/chaingen"
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
// multihash and its values too.
func (p *Publisher) Truth(entries bool) Truth {
	p.mu.RLock()
	n, head := p.published, p.head
	mhs := p.mhs // append-only: the first len(mhs) stay as they are
	p.mu.RUnlock()
	t := Truth{Publisher: p.ID().String(), Ads: n, Fault: p.spec.Fault}
	if head.Defined() {
		t.Head = head.String()
	}
	var es []Entry
	if p.spec.Fault == Honest {
		m := p.chain.ModelAt(n - 1)
		for _, mh := range mhs {
			vs := m.Values(mh)
			if len(vs) == 0 {
				continue
			}
			e := Entry{Multihash: mh.B58String(), Values: make([]Value, len(vs))}
			for i, v := range vs {
				e.Values[i] = Value{ProviderID: v.ProviderID.String(), ContextID: v.ContextID, Metadata: v.Metadata}
			}
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b Entry) int { return bytes.Compare(mhBytes(a.Multihash), mhBytes(b.Multihash)) })
	t.Multihashes = len(es)
	t.Digest = Digest(es)
	if entries {
		t.Entries = es
	}
	return t
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
// the query has entries=1 (or true).
func (p *Publisher) serveTruth(w http.ResponseWriter, r *http.Request) {
	entries, _ := strconv.ParseBool(r.URL.Query().Get("entries"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(p.Truth(entries))
}
