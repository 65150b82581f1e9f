package assigner

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestRules(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		run  func(h *h)
	}{{
		name: "preferred first",
		cfg:  Config{Indexers: ixs("a", "b", "c")},
		run: func(h *h) {
			h.poll("a", false)
			h.pollPref("b", false, pids("P1"), as("X1"), as("X2"))
			h.poll("c", false)
			h.want("announce", h.announce("P1"), "assign P1 b")
		},
	}, {
		name: "fewest assignments",
		cfg:  Config{Indexers: ixs("a", "b", "c")},
		run: func(h *h) {
			h.poll("a", false, as("X1"), as("X2"))
			h.poll("b", false, as("X3"))
			h.poll("c", false)
			h.want("announce", h.announce("P1"), "assign P1 c")
		},
	}, {
		name: "stable ties in pool order, pending counted",
		cfg:  Config{Indexers: ixs("c", "a", "b")},
		run: func(h *h) {
			for _, id := range []string{"a", "b", "c"} {
				h.poll(id, false)
			}
			h.want("P1", h.announce("P1"), "assign P1 c")
			h.want("P2", h.announce("P2"), "assign P2 a")
			h.want("P3", h.announce("P3"), "assign P3 b")
			h.want("P4", h.announce("P4"), "assign P4 c")
			h.want("pending P1 again", h.announce("P1"))
		},
	}, {
		name: "replication",
		cfg:  Config{Replication: 2, Indexers: ixs("a", "b", "c")},
		run: func(h *h) {
			for _, id := range []string{"a", "b", "c"} {
				h.poll(id, false)
			}
			h.want("announce", h.announce("P1"), "assign P1 a", "assign P1 b")
			h.want("a done", h.assigned("a", "P1", Done))
			h.want("b done", h.assigned("b", "P1", Done))
			h.want("again", h.announce("P1"))
			h.want("P2 avoids the loaded", h.announce("P2"), "assign P2 c", "assign P2 a")
		},
	}, {
		name: "replication larger than the pool",
		cfg:  Config{Replication: 3, Indexers: ixs("a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false)
			h.want("announce", h.announce("P1"), "assign P1 a", "assign P1 b", "retry P1 no-candidate")
			h.want("a done", h.assigned("a", "P1", Done))
			h.want("again", h.announce("P1"), "retry P1 no-candidate")
		},
	}, {
		name: "preset publishers and preset replication",
		cfg: Config{Replication: 1, PresetReplication: 2, Indexers: []IndexerConfig{
			{ID: "a"}, {ID: "b", PresetPublishers: pids("P1", "P2")}, {ID: "c", PresetPublishers: pids("P1")}, {ID: "d"},
		}},
		run: func(h *h) {
			// P2's holder outside its preset list (a) is ignored.
			h.poll("a", false, as("P2"))
			h.poll("b", false)
			h.poll("c", false)
			h.poll("d", false)
			h.want("P1 to its presets", h.announce("P1"), "assign P1 b", "assign P1 c")
			h.want("P2 short of preset replication", h.announce("P2"), "assign P2 b", "retry P2 no-candidate")
			h.want("P3 not preset", h.announce("P3"), "assign P3 d")
		},
	}, {
		name: "policy",
		cfg:  Config{Indexers: ixs("a"), Allow: ExceptPolicy(true, pid("P2"))},
		run: func(h *h) {
			h.poll("a", false)
			h.want("denied", h.announce("P2"))
			h.want("allowed", h.announce("P1"), "assign P1 a")
			if h.s.Allowed(pid("P2")) || !h.s.Allowed(pid("P1")) || h.s.Allowed("") {
				h.t.Error("Allowed disagrees with the policy")
			}
		},
	}, {
		name: "allow-list policy",
		cfg:  Config{Indexers: ixs("a"), Allow: ExceptPolicy(false, pid("P2"))},
		run: func(h *h) {
			h.poll("a", false)
			h.want("not listed", h.announce("P1"))
			h.want("listed", h.announce("P2"), "assign P2 a")
		},
	}, {
		name: "unknown indexer: no over-assignment",
		cfg: Config{Replication: 2, Indexers: []IndexerConfig{
			{ID: "a", PresetPublishers: pids("P2")}, {ID: "b"}, {ID: "c"},
		}},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false)
			// c is unknown: it may hold P1, so only one more is safe.
			h.want("P1", h.announce("P1"), "assign P1 a", "retry P1 assignments-unknown")
			// P2 is preset to a only: c cannot hold it toward its count.
			h.want("P2", h.announce("P2"), "assign P2 a")
			h.want("P1 done", h.assigned("a", "P1", Done))
			// c turns out to hold P1: nothing more.
			h.want("c polled", h.poll("c", false, as("P1")))
			h.want("P1 again", h.announce("P1"))
		},
	}, {
		name: "unknown indexer with replication 1 blocks until polled",
		cfg:  Config{Indexers: ixs("a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.want("announce", h.announce("P1"), "retry P1 assignments-unknown")
			h.want("b offline", h.offline("b"))
			h.want("still unknown", h.announce("P1"), "retry P1 assignments-unknown")
			h.want("b online, not yet polled", h.online("b"))
			h.want("b polled: assigned without a new announce", h.poll("b", false, as("X")), "assign P1 a")
		},
	}, {
		name: "offline known indexer keeps its publishers and takes no new ones",
		cfg:  Config{Indexers: ixs("a", "b")},
		run: func(h *h) {
			h.poll("a", false, as("P1"))
			h.poll("b", false, as("X1"), as("X2"))
			h.offline("a")
			h.want("P1 held offline", h.announce("P1"))
			h.want("P2 not to offline a", h.announce("P2"), "assign P2 b")
		},
	}, {
		name: "failed request: uncertain until the next poll",
		cfg:  Config{Indexers: ixs("a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false, as("X"))
			h.want("announce", h.announce("P1"), "assign P1 a")
			h.want("failed", h.assigned("a", "P1", Failed), "retry P1 assignments-unknown")
			h.want("announce again", h.announce("P1"), "retry P1 assignments-unknown")
			h.want("poll: a has it", h.poll("a", false, as("P1")))
			h.want("satisfied", h.announce("P1"))
			h.want("P2", h.announce("P2"), "assign P2 a")
			h.want("P2 failed", h.assigned("a", "P2", Failed), "retry P2 assignments-unknown")
			h.want("poll: a has not", h.poll("a", false, as("P1")), "assign P2 a")
		},
	}, {
		name: "refused: next candidate, not proposed again until the status changes",
		cfg:  Config{Indexers: ixs("a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false, as("X"))
			h.want("announce", h.announce("P1"), "assign P1 a")
			h.want("a refuses", h.assigned("a", "P1", Refused), "assign P1 b")
			h.want("b refuses", h.assigned("b", "P1", Refused), "retry P1 no-candidate")
			h.want("same status", h.poll("a", false))
			h.want("still refused", h.announce("P1"), "retry P1 no-candidate")
			h.offline("b")
			h.want("b back", h.online("b"), "assign P1 b")
		},
	}, {
		name: "already held counts as held",
		cfg:  Config{Indexers: ixs("a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false, as("X"))
			h.want("announce", h.announce("P1"), "assign P1 a")
			h.want("already", h.assigned("a", "P1", AlreadyHeld))
			h.want("again", h.announce("P1"))
		},
	}, {
		name: "frozen: per-publisher handoffs spread with counts updated",
		cfg:  Config{Indexers: ixs("f", "a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false)
			h.want("f frozen", h.poll("f", true, as("P1"), as("P2"), as("P3")),
				"handoff P1 f a", "handoff P2 f b", "handoff P3 f a")
			h.want("P1", h.handedOff("f", "a", "P1", Done))
			h.want("P2", h.handedOff("f", "b", "P2", Done))
			h.want("P3", h.handedOff("f", "a", "P3", Done))
			snap := h.s.Snapshot()
			if len(snap.Handoffs) != 0 {
				h.t.Errorf("handoffs left: %+v", snap.Handoffs)
			}
			h.want("repoll f", h.poll("f", true, as("P1"), as("P2"), as("P3")))
		},
	}, {
		name: "one failed handoff does not abort the rest",
		cfg:  Config{Indexers: ixs("f", "a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false)
			h.want("f frozen", h.poll("f", true, as("P1"), as("P2"), as("P3")),
				"handoff P1 f a", "handoff P2 f b", "handoff P3 f a")
			h.want("P1 refused: next candidate", h.handedOff("f", "a", "P1", Refused), "handoff P1 f b")
			h.want("P2 done", h.handedOff("f", "b", "P2", Done))
			h.want("P3 failed", h.handedOff("f", "a", "P3", Failed), "retry P3 assignments-unknown")
			h.want("P1 done", h.handedOff("f", "b", "P1", Done))
			h.want("a polled without P3", h.poll("a", false), "handoff P3 f a")
		},
	}, {
		name: "incomplete handoff resumes when an indexer comes online or is added",
		cfg:  Config{Indexers: ixs("f", "a")},
		run: func(h *h) {
			h.poll("a", false)
			h.offline("a")
			h.want("f frozen, no candidate", h.poll("f", true, as("P1"), as("P2")),
				"retry P1 no-candidate", "retry P2 no-candidate")
			h.want("a back", h.online("a"), "handoff P1 f a", "handoff P2 f a")
			h.want("P1 done", h.handedOff("f", "a", "P1", Done))
			h.want("P2 refused", h.handedOff("f", "a", "P2", Refused), "retry P2 no-candidate")
			ds, err := h.s.AddIndexer(IndexerConfig{ID: "n"})
			if err != nil {
				h.t.Fatal(err)
			}
			h.want("n added, unknown", short(ds), "retry P2 assignments-unknown")
			h.want("n polled", h.poll("n", false), "handoff P2 f n")
		},
	}, {
		name: "frozen source offline: wait for it, not re-ingest",
		cfg:  Config{Replication: 2, Indexers: ixs("f", "a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false)
			h.offline("a")
			h.offline("b")
			h.want("f frozen", h.poll("f", true, as("P1")), "retry P1 no-candidate")
			h.offline("f")
			// One slot for f's handoff, the other a fresh assignment.
			h.want("a back", h.online("a"), "assign P1 a", "retry P1 frozen-source-offline")
			h.want("b back: the slot is f's", h.online("b"))
			h.want("f back", h.online("f"), "handoff P1 f b")
		},
	}, {
		name: "rebuild completes handoffs via Continued and keeps the receiver",
		cfg:  Config{Indexers: ixs("f", "a", "b")},
		run: func(h *h) {
			h.want("f", h.poll("f", true, as("P1"), as("P2")),
				"retry P1 assignments-unknown", "retry P2 assignments-unknown")
			h.want("a", h.poll("a", false, cont("P1", "f")))
			// b unknown: P2's handoff waits (b may hold it).
			h.want("b", h.poll("b", false, cont("P2", "f")))
			h.want("P1", h.announce("P1"))
			snap := h.s.Snapshot()
			if len(snap.Handoffs) != 0 {
				h.t.Errorf("handoffs: %+v", snap.Handoffs)
			}
			got := snap.Indexers[1].Assigned
			if !slices.Equal(got, []Assignment{cont("P1", "f")}) {
				h.t.Errorf("receiver a lost its assignment: %+v", got)
			}
			// The reference drops the receiver here; then a's freeze would
			// never hand P1 off.
			h.want("a freezes", h.poll("a", true, cont("P1", "f")), "handoff P1 a b")
		},
	}, {
		name: "replication counts only unfrozen holders",
		cfg:  Config{Replication: 2, Indexers: ixs("f", "a", "b", "c")},
		run: func(h *h) {
			h.poll("a", false, as("P1"))
			h.poll("b", false)
			h.poll("c", false, as("X"))
			h.want("f frozen", h.poll("f", true, as("P1"), as("P2")),
				"handoff P1 f b", "handoff P2 f a", "assign P2 b")
		},
	}, {
		name: "frozen publisher already at replication: no handoff",
		cfg:  Config{Indexers: ixs("f", "a", "b")},
		run: func(h *h) {
			h.poll("a", false, as("P1"))
			h.poll("b", false)
			h.want("f frozen", h.poll("f", true, as("P1")))
		},
	}, {
		name: "preset publisher handed off within its list",
		cfg: Config{Indexers: []IndexerConfig{
			{ID: "f", PresetPublishers: pids("P1")}, {ID: "a"}, {ID: "b", PresetPublishers: pids("P1")},
		}},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false, as("X1"), as("X2"))
			h.want("f frozen", h.poll("f", true, as("P1"), as("P2")), "handoff P1 f b", "handoff P2 f a")
		},
	}, {
		name: "no source: assign afresh",
		cfg:  Config{Indexers: ixs("f", "a")},
		run: func(h *h) {
			h.poll("a", false)
			h.want("f frozen", h.poll("f", true, as("P1")), "handoff P1 f a")
			h.want("no source", h.handedOff("f", "a", "P1", NoSource), "assign P1 a")
		},
	}, {
		name: "removing a frozen indexer whose publishers were handed off re-ingests nothing",
		cfg:  Config{Indexers: ixs("f", "a", "b")},
		run: func(h *h) {
			h.poll("f", true, as("P1"))
			h.poll("a", false, cont("P1", "f"))
			h.poll("b", false)
			h.announce("P1")
			ds, err := h.s.RemoveIndexer("f")
			if err != nil {
				h.t.Fatal(err)
			}
			h.want("remove f", short(ds))
			ds, err = h.s.RemoveIndexer("a")
			if err != nil {
				h.t.Fatal(err)
			}
			h.want("remove a: P1 was announced", short(ds), "assign P1 b")
		},
	}, {
		name: "stale and duplicate results",
		cfg:  Config{Indexers: ixs("a", "b")},
		run: func(h *h) {
			h.poll("a", false)
			h.poll("b", false)
			h.want("unknown indexer", h.assigned("z", "P1", Done))
			h.want("unsolicited done is a fact", h.assigned("a", "P1", Done))
			h.want("announce", h.announce("P1"))
			h.want("unsolicited refusal", h.assigned("b", "P2", Refused))
			h.want("P2 skips b", h.announce("P2"), "assign P2 a")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(newH(t, tt.cfg))
		})
	}
}

func TestNewStateValidates(t *testing.T) {
	bad := []Config{
		{Replication: -1},
		{PresetReplication: -1},
		{Indexers: ixs("a", "")},
		{Indexers: ixs("a", "a")},
		{Indexers: []IndexerConfig{{ID: "a", PresetPublishers: []peer.ID{""}}}},
	}
	for _, cfg := range bad {
		if _, err := NewState(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewState(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	s, err := NewState(Config{Indexers: ixs("a")})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if snap.Replication != DefaultReplication || snap.PresetReplication != DefaultPresetReplication {
		t.Errorf("defaults: %+v", snap)
	}
	if _, err := s.AddIndexer(IndexerConfig{ID: "a"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("AddIndexer duplicate: %v", err)
	}
	if _, err := s.Polled("z", IndexerStatus{ID: peerOf("z")}); !errors.Is(err, ErrUnknownIndexer) {
		t.Errorf("Polled unknown: %v", err)
	}
	if _, err := s.Polled("a", IndexerStatus{}); !errors.Is(err, ErrInvalidStatus) {
		t.Errorf("Polled without a peer ID: %v", err)
	}
	for name, f := range map[string]func(string) ([]Decision, error){
		"Offline": s.Offline, "Online": s.Online, "RemoveIndexer": s.RemoveIndexer,
	} {
		if _, err := f("z"); !errors.Is(err, ErrUnknownIndexer) {
			t.Errorf("%s unknown: %v", name, err)
		}
	}
}

// The config is copied: changing the caller's slices changes nothing.
func TestConfigCopied(t *testing.T) {
	cfg := Config{Indexers: []IndexerConfig{{ID: "a", PresetPublishers: pids("P1")}, {ID: "b"}}}
	s, err := NewState(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Indexers[0].ID = "x"
	cfg.Indexers[0].PresetPublishers[0] = pid("P9")
	h := &h{t: t, s: s}
	h.poll("a", false)
	h.poll("b", false)
	h.want("P1 preset to a", h.announce("P1"), "assign P1 a")
}

func TestSnapshot(t *testing.T) {
	h := newH(t, Config{Indexers: []IndexerConfig{{ID: "f"}, {ID: "a", PresetPublishers: pids("P9")}, {ID: "b"}}})
	h.poll("f", true, as("P1"), as("P2"))
	h.pollPref("a", false, pids("P3"), cont("P1", "f"))
	h.want("b", h.poll("b", false), "handoff P2 f b")
	h.s.Announce(pid("P3"))
	h.s.AssignResult("a", pid("P3"), Failed)

	snap := h.s.Snapshot()
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	for _, want := range []string{`"ID":"a"`, `"Frozen":true`, `"Handoffs":[{`, `"To":"b"`, `"Waiting":"assignments-unknown"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("snapshot JSON lacks %s:\n%s", want, b)
		}
	}
	if got := back.Handoffs; len(got) != 1 || got[0].From != "f" || got[0].To != "b" || got[0].FrozenID != peerOf("f") {
		t.Errorf("handoffs %+v", got)
	}
	if got := back.Indexers[1]; !slices.Equal(got.Uncertain, pids("P3")) || !slices.Equal(got.Preset, pids("P9")) {
		t.Errorf("indexer a %+v", got)
	}
	var p1 *PublisherSnapshot
	for i := range back.Publishers {
		if back.Publishers[i].Publisher == pid("P1") {
			p1 = &back.Publishers[i]
		}
	}
	if p1 == nil || len(p1.Assignments) != 2 || !p1.Assignments[0].Frozen || p1.Assignments[1].Continued != peerOf("f") {
		t.Errorf("P1 %+v", p1)
	}
	// The snapshot shares nothing with the state.
	snap.Indexers[0].Assigned[0].Publisher = "changed"
	if h.s.Snapshot().Indexers[0].Assigned[0].Publisher != pid("P1") {
		t.Error("snapshot aliases the state")
	}
}

func TestDeterministic(t *testing.T) {
	run := func() []string {
		h := newH(t, Config{Replication: 2, Indexers: ixs("a", "b", "c", "d")})
		var all []string
		for _, id := range []string{"d", "c", "b", "a"} {
			all = append(all, h.poll(id, false)...)
		}
		for _, p := range []string{"P5", "P3", "P1", "P4", "P2"} {
			all = append(all, h.announce(p)...)
		}
		all = append(all, h.poll("b", true)...)
		return all
	}
	first := run()
	for range 20 {
		if got := run(); !slices.Equal(got, first) {
			t.Fatalf("not deterministic:\n%q\n%q", first, got)
		}
	}
}

func TestKnown(t *testing.T) {
	h := newH(t, Config{
		Indexers: []IndexerConfig{{ID: "a"}, {ID: "b", PresetPublishers: pids("P3")}},
		Allow:    func(p peer.ID) bool { return p != pid("P9") },
	})
	for _, p := range []string{"P1", "P2", "P4", "P9"} {
		if h.s.Known(pid(p)) {
			t.Errorf("%s is known before anything named it", p)
		}
	}
	if !h.s.Known(pid("P3")) {
		t.Error("preset P3 is not known")
	}
	h.poll("a", false, as("P2"))
	h.announce("P9") // rejected by the policy
	h.announce("P4") // pending on a (b is unknown): known
	if !h.s.Known(pid("P2")) || !h.s.Known(pid("P4")) {
		t.Error("a publisher held by an indexer, or announced, is not known")
	}
	if h.s.Known(pid("P1")) || h.s.Known(pid("P9")) {
		t.Error("P1 (never named) or P9 (rejected) is known")
	}
	before := h.s.Snapshot()
	h.s.Known(pid("P7"))
	if got := h.s.Snapshot(); len(got.Publishers) != len(before.Publishers) {
		t.Error("Known changed the state")
	}
}

// MayHold names what to poll for a publisher waiting for
// assignments-unknown: the eligible indexers never polled, and those where
// a request for it failed since their last poll.
func TestMayHold(t *testing.T) {
	h := newH(t, Config{Indexers: []IndexerConfig{{ID: "a"}, {ID: "b"}, {ID: "c", PresetPublishers: pids("Q")}},
		Allow: func(p peer.ID) bool { return p != pid("D") }})
	mayHold := func(p string) []string { return h.s.MayHold(pid(p)) }
	want := func(step string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: MayHold %q, want %q", step, got, want)
		}
	}
	want("start", mayHold("P1"), "a", "b", "c")
	want("preset", mayHold("Q"), "c")
	want("denied", mayHold("D"))
	h.poll("a", false, as("Y"), as("Z"))
	h.want("announce", h.announce("P1"), "retry P1 assignments-unknown")
	want("a polled", mayHold("P1"), "b", "c")
	h.offline("b")
	want("b offline, never polled", mayHold("P1"), "b", "c")
	h.poll("b", false, as("X"))
	h.want("c polled", h.poll("c", false), "assign P1 c")
	want("all polled, P1 pending on c", mayHold("P1"))
	h.want("P1 failed", h.assigned("c", "P1", Failed), "retry P1 assignments-unknown")
	want("P1 failed on c", mayHold("P1"), "c")
	want("P2 unaffected", mayHold("P2"))
	h.want("c polled again", h.poll("c", false), "assign P1 c")
	want("c polled again", mayHold("P1"))
}
