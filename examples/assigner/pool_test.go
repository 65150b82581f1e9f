package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/assigner"
)

// The tests of this file run real indexer nodes (examples/indexer with
// -use-assigner) and the assigner as processes on loopback, each listener
// on port 0, polling every 500ms; publishers are ipnisync publishers of
// generated chains on httptest servers. Each test takes a few seconds;
// every wait is bounded by waitTimeout.

const (
	mAnnounces = "indexkit_assigner_announces_total"
	mDecisions = "indexkit_assigner_decisions_total"
	mRequests  = "indexkit_assigner_requests_total"
	mPolls     = "indexkit_assigner_polls_total"
)

func wantStatus(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: status %d, want %d", what, got, want)
	}
}

// TestPresetPeers: with replication 2 and preset replication 1, a
// publisher preset to n1 is assigned to n1 only, while a publisher that is
// not preset gets both nodes; after more polls and a new head nothing
// changes. Restarted with preset replication 2, the preset publisher,
// short of it, waits for a candidate (no-candidate) rather than spill over
// to n0, which is not in its preset list.
func TestPresetPeers(t *testing.T) {
	p := newPublisher(t, 21, 4) // preset to n1
	q := newPublisher(t, 22, 4) // not preset
	n0, n1 := startIndexerDir(t, t.TempDir()), startIndexerDir(t, t.TempDir())
	pool := []string{n0.flag("n0"), n1.flag("n1") + ",preset=" + p.id.String()}
	a := startAssigner(t, pool, "-replication", "2", "-preset-replication", "1")
	a.waitKnown(t, "n0", "n1")

	wantStatus(t, "announce P", p.announceTo(t, a.announce), http.StatusNoContent)
	wantStatus(t, "announce Q", q.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n1 to ingest P", func() bool { return n1.headOf(t, p.id).Equals(p.head()) })
	waitFor(t, "n0 and n1 to ingest Q", func() bool {
		return n0.headOf(t, q.id).Equals(q.head()) && n1.headOf(t, q.id).Equals(q.head())
	})

	check := func(t *testing.T, a *asg, required int, waiting assigner.Reason) {
		t.Helper()
		if held, _ := n0.holds(t, p.id); held {
			t.Fatal("n0 is assigned the publisher preset to n1")
		}
		if _, walked := n0.pubStatus(t, p.id); walked {
			t.Fatal("n0 walked the publisher preset to n1")
		}
		if held, _ := n1.holds(t, p.id); !held {
			t.Fatal("n1 is not assigned its preset publisher")
		}
		ps, _ := a.publisher(t, p.id)
		if !ps.Preset || ps.Required != required || len(ps.Pending) != 0 || ps.Waiting != waiting ||
			!maps.Equal(indexersOf(ps), map[string]peer.ID{"n1": ""}) {
			t.Fatalf("P in GET /assignments: %+v, want preset, required %d, on n1 only, waiting %q", ps, required, waiting)
		}
		qs, _ := a.publisher(t, q.id)
		if qs.Preset || qs.Required != 2 || !maps.Equal(indexersOf(qs), map[string]peer.ID{"n0": "", "n1": ""}) {
			t.Fatalf("Q in GET /assignments: %+v, want required 2 on n0 and n1", qs)
		}
	}
	a.waitPolls(t, 2, "n0", "n1")
	check(t, a, 1, "")
	if got := a.metric(t, mDecisions, `kind="assign"`); got != 3 {
		t.Fatalf("%v assign decisions, want 3 (P to n1, Q to n0 and n1)", got)
	}

	// A new head of P goes to n1 alone; nothing is assigned.
	p.extend(t, 1)
	wantStatus(t, "announce P's new head", p.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n1 to ingest P's new head", func() bool { return n1.headOf(t, p.id).Equals(p.head()) })
	check(t, a, 1, "")
	if got := a.metric(t, mDecisions, `kind="assign"`); got != 3 {
		t.Fatalf("%v assign decisions after P's new head, want 3", got)
	}

	// Preset replication 2 cannot be met with one preset node: P waits.
	a.stop(t)
	a = startAssigner(t, pool, "-replication", "2", "-preset-replication", "2")
	a.waitKnown(t, "n0", "n1")
	wantStatus(t, "announce P", p.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "P to wait for a candidate", func() bool {
		ps, _ := a.publisher(t, p.id)
		return ps.Waiting == assigner.ReasonNoCandidate
	})
	a.waitPolls(t, 2, "n0", "n1")
	check(t, a, 2, assigner.ReasonNoCandidate)
	if got := a.metric(t, mDecisions, `kind="assign"`); got != 0 {
		t.Fatalf("%v assign decisions with preset replication 2, want 0", got)
	}
}

// TestIndexerOfflineAtStart: n0, assigned publisher P by an earlier
// assigner, is down when the assigner starts (its three URLs are gates of
// the test that drop every connection until n0 runs). While n0's
// assignments are unknown nothing is assigned (replication 1): neither P
// nor the new publisher Q, either of which n0 may hold, goes to n1. Once
// n0 is up (same data directory, new ports behind the same URLs) P stays
// on n0 alone, Q goes to n1, and n0 gets its share of what comes next: R,
// on a tie, goes to n0 and is ingested through the forwarded announce.
func TestIndexerOfflineAtStart(t *testing.T) {
	p, q, r := newPublisher(t, 31, 3), newPublisher(t, 32, 3), newPublisher(t, 33, 3)

	dir0 := t.TempDir()
	n0 := startIndexerDir(t, dir0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n0.client(t).Assign(ctx, p.id); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "announce P to n0", p.announceTo(t, n0.ingest), http.StatusNoContent)
	waitFor(t, "n0 to ingest P", func() bool { return n0.headOf(t, p.id).Equals(p.head()) })
	if code := n0.Stop(); code != 0 {
		t.Fatalf("n0 exited %d", code)
	}

	n1 := startIndexerDir(t, t.TempDir())
	gAdmin, gFind, gIngest := newGate(t), newGate(t), newGate(t)
	a := startAssigner(t, []string{
		fmt.Sprintf("id=n0,admin=%s,find=%s,ingest=%s", gAdmin.url(), gFind.url(), gIngest.url()),
		n1.flag("n1"),
	})
	a.waitKnown(t, "n1")
	if ix := a.indexers(t)["n0"]; ix.Known || ix.Online {
		t.Fatalf("n0 in GET /indexers while down: %+v", ix)
	}
	wantStatus(t, "announce P", p.announceTo(t, a.announce), http.StatusNoContent)
	wantStatus(t, "announce Q", q.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "P and Q to wait for n0's assignments", func() bool {
		ps, _ := a.publisher(t, p.id)
		qs, _ := a.publisher(t, q.id)
		return ps.Announced && ps.Waiting == assigner.ReasonUnknown && qs.Announced && qs.Waiting == assigner.ReasonUnknown
	})
	// Polls of n0 fail, n1's succeed, and still nothing is assigned.
	base := a.metric(t, mPolls, `indexer="n0"`, `result="error"`)
	a.waitPolls(t, 2, "n1")
	waitFor(t, "more failed polls of n0", func() bool { return a.metric(t, mPolls, `indexer="n0"`, `result="error"`) >= base+2 })
	if d := a.metric(t, mDecisions, `kind="assign"`) + a.metric(t, mRequests); d != 0 {
		t.Fatalf("%v assign decisions or requests while n0 is down, want 0", d)
	}
	if as := n1.assigned(t); len(as) != 0 {
		t.Fatalf("n1 assigned %v while n0 is down", as)
	}

	// n0 comes up behind the same URLs.
	n0 = startIndexerDir(t, dir0)
	gAdmin.open(n0.admin)
	gFind.open(n0.find)
	gIngest.open(n0.ingest)
	a.waitKnown(t, "n0", "n1")
	waitFor(t, "n1 to ingest Q", func() bool { return n1.headOf(t, q.id).Equals(q.head()) })
	ps, _ := a.publisher(t, p.id)
	qs, _ := a.publisher(t, q.id)
	if !maps.Equal(indexersOf(ps), map[string]peer.ID{"n0": ""}) || ps.Waiting != "" || len(ps.Pending) != 0 {
		t.Fatalf("P: %+v, want on n0 only", ps)
	}
	if !maps.Equal(indexersOf(qs), map[string]peer.ID{"n1": ""}) || qs.Waiting != "" {
		t.Fatalf("Q: %+v, want on n1 only", qs)
	}

	// Both hold one publisher; the tie goes to n0, first in the pool.
	wantStatus(t, "announce R", r.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n0 to ingest R", func() bool { return n0.headOf(t, r.id).Equals(r.head()) })
	a.waitPolls(t, 1, "n0", "n1")
	if got := a.metric(t, mDecisions, `kind="assign"`); got != 2 {
		t.Fatalf("%v assign decisions, want 2 (Q to n1, R to n0)", got)
	}
	for _, c := range []struct {
		n    *node
		name string
		p    peer.ID
		want bool
	}{{n0, "n0", p.id, true}, {n0, "n0", q.id, false}, {n0, "n0", r.id, true}, {n1, "n1", p.id, false}, {n1, "n1", q.id, true}, {n1, "n1", r.id, false}} {
		if held, _ := c.n.holds(t, c.p); held != c.want {
			t.Errorf("%s holds %s: %v, want %v", c.name, c.p, held, c.want)
		}
	}
}

// TestAssignerRestartMidHandoff: n0 holds P and freezes; the assigner
// sends the handoff of P to n1, whose admin API is behind a proxy of the
// test that holds the request; the assigner is stopped while it waits for
// the answer. Then either
//   - delivered: the held request reaches n1 after the assigner is gone,
//     so the handoff is done with no assigner to see it; the restarted
//     assigner recognises it from n1's GET /ingest/assigned (Continued =
//     n0) and sends no second handoff; or
//   - dropped: the request never reaches n1; the restarted assigner sends
//     the handoff itself, once.
//
// Either way GET /assignments shows P on n1 continuing n0, no handoff is
// left, the proxy counted exactly the handoffs expected (through two more
// polls), and P's next head, announced to the assigner, is ingested by
// n1.
func TestAssignerRestartMidHandoff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deliver bool
	}{{"delivered while the assigner is down", true}, {"dropped, sent by the restarted assigner", false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPublisher(t, 41, 5)
			n0, n1 := startIndexerDir(t, t.TempDir()), startIndexerDir(t, t.TempDir())
			hp := newHoldProxy(t, n1.admin)
			pool := []string{n0.flag("n0"), fmt.Sprintf("id=n1,admin=%s,find=%s,ingest=%s", hp.srv.URL, n1.find, n1.ingest)}
			a := startAssigner(t, pool)
			a.waitKnown(t, "n0", "n1")
			wantStatus(t, "announce P", p.announceTo(t, a.announce), http.StatusNoContent)
			waitFor(t, "n0 to ingest P", func() bool { return n0.headOf(t, p.id).Equals(p.head()) })

			n0.freeze(t)
			n0ID := n0.status(t).ID
			hp.waitArrival(t)
			a.stop(t) // in the middle of the handoff
			if tc.deliver {
				wantStatus(t, "the held handoff", hp.release(t, true), http.StatusOK)
				if held, c := n1.holds(t, p.id); !held || c != n0ID {
					t.Fatalf("n1 after the handoff: held %v, Continued %q, want %s", held, c, n0ID)
				}
			} else {
				hp.release(t, false)
				if held, _ := n1.holds(t, p.id); held {
					t.Fatal("n1 holds P after the dropped handoff")
				}
			}

			a = startAssigner(t, pool)
			wantHandoffs := 1
			if !tc.deliver {
				hp.waitArrival(t)
				wantStatus(t, "the restarted assigner's handoff", hp.release(t, true), http.StatusOK)
				wantHandoffs = 2
			}
			a.waitKnown(t, "n0", "n1")
			waitFor(t, "the handoff to be recorded", func() bool {
				ps, as := a.publisher(t, p.id)
				return len(as.Handoffs) == 0 && len(ps.Pending) == 0 && maps.Equal(indexersOf(ps), map[string]peer.ID{"n0": "", "n1": n0ID})
			})
			a.waitPolls(t, 2, "n0", "n1")
			if got := hp.handoffs(); got != wantHandoffs {
				t.Fatalf("%d handoff requests reached n1's admin API, want %d", got, wantHandoffs)
			}
			ps, _ := a.publisher(t, p.id)
			for _, x := range ps.Assignments {
				if x.Frozen != (x.Indexer == "n0") {
					t.Fatalf("P's assignments %+v: want n0 frozen, n1 not", ps.Assignments)
				}
			}
			if got, want := a.metric(t, mDecisions, `kind="handoff"`), float64(wantHandoffs-1); got != want {
				t.Fatalf("restarted assigner: %v handoff decisions, want %v", got, want)
			}
			if got, want := a.metric(t, mRequests, `kind="handoff"`, `outcome="done"`), float64(wantHandoffs-1); got != want {
				t.Fatalf("restarted assigner: %v handoffs done, want %v", got, want)
			}
			if got := a.metric(t, mDecisions, `kind="assign"`); got != 0 {
				t.Fatalf("restarted assigner: %v assign decisions, want 0", got)
			}

			// n1 keeps P: its next head, announced to the assigner, is
			// forwarded to n1 and ingested there.
			p.extend(t, 2)
			wantStatus(t, "announce P's new head", p.announceTo(t, a.announce), http.StatusNoContent)
			waitFor(t, "n1 to ingest P's new head", func() bool { return n1.headOf(t, p.id).Equals(p.head()) })
			if held, c := n1.holds(t, p.id); !held || c != n0ID {
				t.Fatalf("n1 at the end: held %v, Continued %q, want %s", held, c, n0ID)
			}
		})
	}
}

// TestAssignerOffline: P is assigned to n0, then the assigner stops.
// P keeps publishing: its new heads, announced straight to the nodes'
// ingest APIs (as a publisher's HTTP announces, or gossip, reach them),
// are ingested by n0 and refused by n1 (403: not assigned there). A new
// publisher Q announcing meanwhile is refused by both: without the
// assigner nobody takes it.
//
// "Picked up when it returns" means: the assigner persists nothing and,
// as the reference, assigns only on an announce, so Q's announces made
// while it was down are lost; Q is picked up at its next announce (a
// publisher announces every new head, and re-announces on gossip), which
// the restarted assigner assigns to the least loaded node, n1, which then
// ingests Q's whole chain. The restart itself changes nothing: P stays on
// n0 alone and its next head, announced to the assigner, reaches n0.
func TestAssignerOffline(t *testing.T) {
	p, q := newPublisher(t, 51, 4), newPublisher(t, 52, 4)
	n0, n1 := startIndexerDir(t, t.TempDir()), startIndexerDir(t, t.TempDir())
	pool := []string{n0.flag("n0"), n1.flag("n1")}
	a := startAssigner(t, pool)
	a.waitKnown(t, "n0", "n1")
	wantStatus(t, "announce P", p.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n0 to ingest P", func() bool { return n0.headOf(t, p.id).Equals(p.head()) })
	a.stop(t)

	for i := range 2 {
		p.extend(t, 2)
		wantStatus(t, fmt.Sprintf("P's head %d to n0", i), p.announceTo(t, n0.ingest), http.StatusNoContent)
		wantStatus(t, fmt.Sprintf("P's head %d to n1", i), p.announceTo(t, n1.ingest), http.StatusForbidden)
		waitFor(t, "n0 to ingest P's new head", func() bool { return n0.headOf(t, p.id).Equals(p.head()) })
	}
	wantStatus(t, "Q to n0", q.announceTo(t, n0.ingest), http.StatusForbidden)
	wantStatus(t, "Q to n1", q.announceTo(t, n1.ingest), http.StatusForbidden)
	for _, n := range []*node{n0, n1} {
		if _, ok := n.pubStatus(t, q.id); ok {
			t.Fatalf("%s walks Q, which no assigner assigned", n.admin)
		}
	}
	if _, ok := n1.pubStatus(t, p.id); ok {
		t.Fatal("n1 walks P, assigned to n0")
	}

	a = startAssigner(t, pool)
	a.waitKnown(t, "n0", "n1")
	a.waitPolls(t, 1, "n0", "n1")
	ps, as := a.publisher(t, p.id)
	if len(as.Publishers) != 1 || !maps.Equal(indexersOf(ps), map[string]peer.ID{"n0": ""}) || ps.Announced {
		t.Fatalf("restarted assigner: %+v, want P on n0 only, not announced yet", as)
	}

	q.extend(t, 1)
	wantStatus(t, "Q's next announce to the assigner", q.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n1 to ingest Q", func() bool { return n1.headOf(t, q.id).Equals(q.head()) })
	if st, _ := n1.pubStatus(t, q.id); st.AdsApplied != uint64(q.chain.Len()) {
		t.Fatalf("n1 applied %d of Q's %d ads", st.AdsApplied, q.chain.Len())
	}
	p.extend(t, 1)
	wantStatus(t, "P's next announce to the assigner", p.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n0 to ingest P's newest head", func() bool { return n0.headOf(t, p.id).Equals(p.head()) })
	if st, _ := n0.pubStatus(t, p.id); st.AdsApplied != uint64(p.chain.Len()) {
		t.Fatalf("n0 applied %d of P's %d ads", st.AdsApplied, p.chain.Len())
	}
	a.waitPolls(t, 1, "n0", "n1")
	if got := a.metric(t, mDecisions, `kind="assign"`); got != 1 {
		t.Fatalf("restarted assigner: %v assign decisions, want 1 (Q to n1)", got)
	}
	if got := a.metric(t, mAnnounces, `source="http"`); got != 2 {
		t.Fatalf("restarted assigner: %v HTTP announces, want 2", got)
	}
	for _, c := range []struct {
		n    *node
		name string
		p    peer.ID
		want bool
	}{{n0, "n0", p.id, true}, {n0, "n0", q.id, false}, {n1, "n1", p.id, false}, {n1, "n1", q.id, true}} {
		if held, _ := c.n.holds(t, c.p); held != c.want {
			t.Errorf("%s holds %s: %v, want %v", c.name, c.p, held, c.want)
		}
	}
}

// TestRemoveFrozenIndexer: n0 holds P and freezes; P is handed off to
// n1. Then n0 is shut down and removed from the pool, and the assigner
// restarts without it. Nothing is re-assigned (no decision at all): n1
// keeps P with Continued = n0, its walk of P is where it was (LastHead,
// ads applied). P's next head, announced to the restarted assigner, is
// ingested by n1, which fetches only the new ads: none of the blocks of
// the chain up to n0's FrozenAt (all of which n0 fetched) is fetched again
// from the publisher after the freeze, so P is not re-ingested from
// genesis; but FrozenAt itself, once, which n1 checks against the
// publisher before it resumes there.
func TestRemoveFrozenIndexer(t *testing.T) {
	p := newPublisher(t, 61, 6)
	n0, n1 := startIndexerDir(t, t.TempDir()), startIndexerDir(t, t.TempDir())
	a := startAssigner(t, []string{n0.flag("n0"), n1.flag("n1")})
	a.waitKnown(t, "n0", "n1")
	wantStatus(t, "announce P", p.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n0 to ingest P", func() bool { return n0.headOf(t, p.id).Equals(p.head()) })

	before := p.fetches()
	old := map[cid.Cid]bool{}
	for _, c := range before {
		old[c] = true
	}
	for _, c := range p.chain.Ads {
		if !old[c] {
			t.Fatalf("n0 did not fetch ad %s", c)
		}
	}
	frozenAt := p.head()
	n0.freeze(t)
	n0ID := n0.status(t).ID
	waitFor(t, "the handoff to n1", func() bool {
		held, c := n1.holds(t, p.id)
		return held && c == n0ID
	})
	waitFor(t, "the handoff to be recorded", func() bool {
		ps, as := a.publisher(t, p.id)
		return len(as.Handoffs) == 0 && maps.Equal(indexersOf(ps), map[string]peer.ID{"n0": "", "n1": n0ID})
	})
	waitFor(t, "n1 to be at n0's FrozenAt", func() bool { return n1.headOf(t, p.id).Equals(frozenAt) })
	st1, _ := n1.pubStatus(t, p.id)

	a.stop(t)
	if code := n0.Stop(); code != 0 {
		t.Fatalf("n0 exited %d", code)
	}
	a = startAssigner(t, []string{n1.flag("n1")})
	a.waitKnown(t, "n1")
	a.waitPolls(t, 2, "n1")
	if got := a.metric(t, mDecisions); got != 0 {
		t.Fatalf("restarted assigner: %v decisions, want none\n%s", got, a.Output())
	}
	ps, as := a.publisher(t, p.id)
	if len(as.Handoffs) != 0 || ps.Waiting != "" || !maps.Equal(indexersOf(ps), map[string]peer.ID{"n1": n0ID}) {
		t.Fatalf("restarted assigner: %+v, want P on n1 continuing n0", as)
	}
	st2, _ := n1.pubStatus(t, p.id)
	if !st2.LastHead.Equals(st1.LastHead) || st2.AdsApplied < st1.AdsApplied || st2.AdsWalked < st1.AdsWalked {
		t.Fatalf("n1's walk of P changed across the restart: %+v, then %+v", st1, st2)
	}

	p.extend(t, 3)
	wantStatus(t, "P's next announce", p.announceTo(t, a.announce), http.StatusNoContent)
	waitFor(t, "n1 to ingest P's new head", func() bool { return n1.headOf(t, p.id).Equals(p.head()) })
	after := p.fetches()[len(before):]
	fetched := map[cid.Cid]bool{}
	for _, c := range after {
		switch {
		case c.Equals(frozenAt) && !fetched[c]: // the handoff's check of FrozenAt
		case old[c]:
			t.Errorf("block %s of the chain up to FrozenAt fetched again after the freeze", c)
		}
		fetched[c] = true
	}
	if !fetched[frozenAt] {
		t.Errorf("FrozenAt %s not fetched: n1 resumed there without checking it against the publisher", frozenAt)
	}
	for _, c := range p.chain.Ads[len(p.chain.Ads)-3:] {
		if !fetched[c] {
			t.Errorf("new ad %s not fetched", c)
		}
	}
	st3, _ := n1.pubStatus(t, p.id)
	if st3.AdsApplied != st2.AdsApplied+3 {
		t.Errorf("n1 applied %d ads in all, %d before the new head: want 3 more", st3.AdsApplied, st2.AdsApplied)
	}
	if held, c := n1.holds(t, p.id); !held || c != n0ID {
		t.Fatalf("n1 at the end: held %v, Continued %q, want %s", held, c, n0ID)
	}
}
