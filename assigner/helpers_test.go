package assigner

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// The table tests name publishers P1, P2… and indexers a, b, f…; an
// indexer's peer ID is "peer-" and its name. Decisions are compared in a
// compact form: "assign P1 a", "handoff P1 f a", "retry P1 no-candidate".

// pid is the peer ID named s: a valid one (the identity multihash of the
// name), so that snapshots round-trip through JSON, and that sorts as
// the names do (by length, then bytes).
func pid(s string) peer.ID {
	p := peer.ID(append([]byte{0x00, byte(len(s))}, s...))
	namesMu.Lock()
	names[p] = s
	namesMu.Unlock()
	return p
}

var (
	namesMu sync.Mutex
	names   = map[peer.ID]string{}
)

// name is the name pid was given, or the peer ID's string.
func name(p peer.ID) string {
	namesMu.Lock()
	defer namesMu.Unlock()
	if n, ok := names[p]; ok {
		return n
	}
	return p.String()
}

func peerOf(id string) peer.ID { return pid("peer-" + id) }

func pids(ss ...string) []peer.ID {
	out := make([]peer.ID, len(ss))
	for i, s := range ss {
		out[i] = pid(s)
	}
	return out
}

func ixs(ids ...string) []IndexerConfig {
	out := make([]IndexerConfig, len(ids))
	for i, id := range ids {
		out[i] = IndexerConfig{ID: id}
	}
	return out
}

// as is an assignment without Continued; cont one continued from the
// frozen indexer named from.
func as(p string) Assignment         { return Assignment{Publisher: pid(p)} }
func cont(p, from string) Assignment { return Assignment{Publisher: pid(p), Continued: peerOf(from)} }

func short(ds []Decision) []string {
	out := []string{}
	for _, d := range ds {
		switch d.Kind {
		case KindAssign:
			out = append(out, fmt.Sprintf("assign %s %s", name(d.Publisher), d.Indexer))
		case KindHandoff:
			out = append(out, fmt.Sprintf("handoff %s %s %s", name(d.Publisher), d.From, d.Indexer))
		case KindRetryLater:
			out = append(out, fmt.Sprintf("retry %s %s", name(d.Publisher), d.Reason))
		default:
			out = append(out, fmt.Sprintf("? %+v", d))
		}
	}
	return out
}

// h drives a State in a table test, failing on errors.
type h struct {
	t *testing.T
	s *State
}

func newH(t *testing.T, cfg Config) *h {
	t.Helper()
	s, err := NewState(cfg)
	if err != nil {
		t.Fatalf("NewState: %v", err)
	}
	return &h{t: t, s: s}
}

func (h *h) poll(id string, frozen bool, assigned ...Assignment) []string {
	return h.pollPref(id, frozen, nil, assigned...)
}

func (h *h) pollPref(id string, frozen bool, preferred []peer.ID, assigned ...Assignment) []string {
	h.t.Helper()
	ds, err := h.s.Polled(id, IndexerStatus{ID: peerOf(id), Frozen: frozen, Assigned: assigned, Preferred: preferred})
	if err != nil {
		h.t.Fatalf("Polled(%s): %v", id, err)
	}
	return short(ds)
}

func (h *h) announce(p string) []string { return short(h.s.Announce(pid(p))) }

func (h *h) assigned(id, p string, o Outcome) []string {
	return short(h.s.AssignResult(id, pid(p), o))
}

func (h *h) handedOff(from, to, p string, o Outcome) []string {
	return short(h.s.HandoffResult(from, to, pid(p), o))
}

func (h *h) offline(id string) []string {
	h.t.Helper()
	ds, err := h.s.Offline(id)
	if err != nil {
		h.t.Fatalf("Offline(%s): %v", id, err)
	}
	return short(ds)
}

func (h *h) online(id string) []string {
	h.t.Helper()
	ds, err := h.s.Online(id)
	if err != nil {
		h.t.Fatalf("Online(%s): %v", id, err)
	}
	return short(ds)
}

func (h *h) want(step string, got []string, want ...string) {
	h.t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		h.t.Errorf("%s:\n got  %q\n want %q", step, got, want)
	}
}
