package leasetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// RunModel drives a store and a trivially correct reference model with the
// same random operations (puts, bids, evaluations, renewals, releases,
// owner updates, heartbeats, time steps) on a few items and nodes, and
// compares every result and, after each step, every row. It runs a
// configuration with a static threshold and one with dynamic max-bids and
// live bidders only, for each of a few seeds.
//
// Fences are compared by order only: the backend's fence must grow exactly
// when the model grants, so a backend may take fences from a clock. Every
// evaluation's Threshold (the effective max-bids) is compared too.
func RunModel(t *testing.T, newStore Factory, steps int) {
	runModels(t, newStore, steps, false)
}

// RunModelUntimed is [RunModel] without time steps, for a backend whose
// clock the suite cannot move (a server's): the same random operations,
// on a real clock, with a TTL, auction window and liveness window of
// hours, so that nothing expires during a run and every auction closes by
// its threshold (a short circuit) or stays open. Each step costs a few
// round trips to the backend; a few hundred to a few thousand steps are
// enough.
func RunModelUntimed(t *testing.T, newStore Factory, steps int) {
	runModels(t, newStore, steps, true)
}

func runModels(t *testing.T, newStore Factory, steps int, untimed bool) {
	configs := map[string]modelConfig{
		"static":  {maxBids: 3},
		"dynamic": {dynamic: true, liveOnly: true},
	}
	for name, mc := range configs {
		mc.untimed = untimed
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed=%d", name, seed), func(t *testing.T) {
				runModel(t, newStore, mc, seed, steps)
			})
		}
	}
}

type modelConfig struct {
	maxBids           int
	dynamic, liveOnly bool
	untimed           bool // no time steps, on a real clock with long units
}

// The model keeps time as an integer number of units and recomputes
// everything from plain lists.
type model struct {
	mc    modelConfig
	now   int
	items map[string]*mItem
	// bids lists every bid ever placed, closed ones included.
	bids  []mBid
	beats map[string]int // node -> last heartbeat
	// lastTh is the threshold the last evaluation of an open auction
	// applied.
	lastTh int
}

type mItem struct {
	owner    string
	expiry   int
	fence    int
	minBid   int64
	maxBids  int
	round    int
	open     bool
	start    int
	unleased int
	commit   string
	draining bool
	version  int
}

type mBid struct {
	item, node string
	free       int64
	round, at  int
	closed     bool
	arrival    int // global order
}

const (
	mTTL      = 5
	mWindow   = 4
	mGrace    = 1
	mLiveness = 3
	mStarve   = 2
)

func (m *model) item(id string) *mItem {
	it := m.items[id]
	if it != nil && it.owner != "" && m.now >= it.expiry {
		it.owner, it.draining = "", false
	}
	return it
}

func (m *model) live(node string) bool {
	t, ok := m.beats[node]
	return ok && m.now-t < mLiveness
}

func (m *model) liveCount() int {
	n := 0
	for node := range m.beats {
		if m.live(node) {
			n++
		}
	}
	return n
}

func (m *model) threshold(it *mItem) int {
	if it.maxBids > 0 {
		return it.maxBids
	}
	if m.mc.dynamic {
		if n := m.liveCount(); n > 0 {
			return n
		}
	}
	return m.mc.maxBids
}

func (m *model) openBids(id string) []*mBid {
	var out []*mBid
	for i := range m.bids {
		b := &m.bids[i]
		if b.item == id && !b.closed {
			out = append(out, b)
		}
	}
	return out
}

func (m *model) pending(node string) bool {
	for _, b := range m.bids {
		if b.node == node && !b.closed && m.now < b.at+mWindow+mGrace {
			return true
		}
	}
	return false
}

// evaluate returns the outcome, the winner, and whether it closed.
func (m *model) evaluate(id string) (lease.Outcome, string) {
	it := m.item(id)
	if !it.open {
		return lease.NoAuction, ""
	}
	bids := m.openBids(id)
	n := m.threshold(it)
	m.lastTh = n
	if m.now < it.start+mWindow && (n == 0 || len(bids) < n) {
		return lease.NotDue, ""
	}
	it.open = false
	var eligible []*mBid
	for _, b := range bids {
		b.closed = true
		if b.free >= it.minBid && (!m.mc.liveOnly || m.live(b.node)) {
			eligible = append(eligible, b)
		}
	}
	if len(eligible) == 0 {
		it.unleased++
		return lease.NoWinner, ""
	}
	slices.SortStableFunc(eligible, func(a, b *mBid) int {
		if a.free != b.free {
			if a.free > b.free {
				return -1
			}
			return 1
		}
		return a.arrival - b.arrival
	})
	w := eligible[0]
	it.owner, it.expiry, it.draining, it.unleased = w.node, m.now+mTTL, false, 0
	it.fence++
	return lease.Granted, w.node
}

// bid returns the bid's error and, if the bid closed the auction (a short
// circuit, or a late bid), the outcome and winner.
func (m *model) bid(id, node string, free int64) (lease.Outcome, string, error) {
	it := m.item(id)
	switch {
	case it.owner != "":
		return 0, "", lease.ErrLeased
	case free < it.minBid:
		return 0, "", lease.ErrBidTooLow
	case m.pending(node):
		return 0, "", lease.ErrBidPending
	}
	if it.open && m.now >= it.start+mWindow {
		o, w := m.evaluate(id)
		return o, w, lease.ErrAuctionClosed
	}
	if !it.open {
		it.open, it.start = true, m.now
		it.round++
	}
	m.bids = append(m.bids, mBid{item: id, node: node, free: free, round: it.round, at: m.now, arrival: len(m.bids)})
	if n := m.threshold(it); n > 0 && len(m.openBids(id)) >= n {
		o, w := m.evaluate(id)
		return o, w, nil
	}
	return lease.NotDue, "", nil
}

// check is the owner check: model fence f, holder node.
func (m *model) check(id, node string, f int) error {
	it := m.item(id)
	switch {
	case f < it.fence:
		return lease.ErrStaleFence
	case f > it.fence || it.owner == "" || it.owner != node:
		return lease.ErrNotHeld
	}
	return nil
}

var sentinels = []error{
	lease.ErrNotFound, lease.ErrNotHeld, lease.ErrStaleFence, lease.ErrAuctionClosed,
	lease.ErrBidPending, lease.ErrBidTooLow, lease.ErrLeased, lease.ErrVersionConflict,
}

func class(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

func runModel(t *testing.T, newStore Factory, mc modelConfig, seed uint64, steps int) {
	u := time.Second
	clk := NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if mc.untimed {
		// A run takes seconds of real time; a unit of an hour keeps every
		// lease, window, pending marker and heartbeat far from expiry.
		u, clk = time.Hour, RealClock()
	}
	opts := []lease.Option{
		lease.WithTTL(mTTL * u), lease.WithAuctionWindow(mWindow * u), lease.WithPendingGrace(mGrace * u),
		lease.WithStarveAfter(mStarve), lease.WithMaxBids(mc.maxBids),
	}
	if mc.dynamic {
		opts = append(opts, lease.WithDynamicMaxBids(mLiveness*u))
	}
	if mc.liveOnly {
		opts = append(opts, lease.WithLiveBiddersOnly())
	}
	s := newStore(t, clk, opts...)
	defer s.Close()
	ctx := context.Background()
	m := &model{mc: mc, items: map[string]*mItem{}, beats: map[string]int{}}
	rng := rand.New(rand.NewPCG(seed, 7))
	items := []string{"a", "b", "c"}
	nodes := []string{"n0", "n1", "n2", "n3"}
	// fences maps each item's model fence to the backend's.
	fences := map[string][]lease.Fence{}
	for _, id := range items {
		fences[id] = []lease.Fence{0}
	}
	backendFence := func(id string, f int) lease.Fence {
		fs := fences[id]
		if f < len(fs) {
			return fs[f]
		}
		return fs[len(fs)-1] + 1 // a fence from the future
	}
	grant := func(step int, id, node string, g *lease.Grant) {
		t.Helper()
		fs := fences[id]
		if g == nil || g.Holder != node || g.Fence <= fs[len(fs)-1] {
			t.Fatalf("step %d: grant %+v, model grants %s to %s after fence %d", step, g, id, node, fs[len(fs)-1])
		}
		fences[id] = append(fs, g.Fence)
	}
	for step := range steps {
		id := items[rng.IntN(len(items))]
		node := nodes[rng.IntN(len(nodes))]
		what := ""
		switch k := rng.IntN(100); {
		case k < 8 || m.items[id] == nil:
			minBid, maxBids := int64(rng.IntN(3))*10, rng.IntN(3)
			what = fmt.Sprintf("Put(%s, min %d, max %d)", id, minBid, maxBids)
			if err := s.Put(ctx, lease.Item{ID: id, Commit: "c", MinBid: minBid, MaxBids: maxBids}); err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
			it := m.items[id]
			if it == nil {
				it = &mItem{}
				m.items[id] = it
			}
			it.minBid, it.maxBids, it.commit = minBid, maxBids, "c"
			it.version++
		case k < 35:
			free := int64(rng.IntN(5)) * 10
			what = fmt.Sprintf("Bid(%s, %s, %d)", id, node, free)
			res, err := s.Bid(ctx, id, node, free)
			wo, ww, werr := m.bid(id, node, free)
			if class(err) != werr {
				t.Fatalf("step %d: %s = %v, model %v", step, what, err, werr)
			}
			if werr == lease.ErrAuctionClosed && wo == lease.Granted {
				// The late bid closed the auction; the grant shows in the row.
				r, err := s.Get(ctx, id)
				if err != nil {
					t.Fatalf("step %d: %s: Get: %v", step, what, err)
				}
				grant(step, id, ww, &lease.Grant{Ref: lease.Ref{Item: id, Holder: r.Owner, Fence: r.Fence}})
			}
			if err == nil {
				switch {
				case wo == lease.NotDue && res.Result != nil:
					t.Fatalf("step %d: %s closed the auction (%+v), model did not", step, what, res.Result)
				case wo != lease.NotDue && (res.Result == nil || res.Result.Outcome != wo):
					t.Fatalf("step %d: %s result %+v, model %v", step, what, res.Result, wo)
				case wo == lease.Granted:
					grant(step, id, ww, res.Result.Grant)
				}
				if res.Result != nil && res.Result.Threshold != m.lastTh {
					t.Fatalf("step %d: %s closed with threshold %d, model %d", step, what, res.Result.Threshold, m.lastTh)
				}
			}
		case k < 50:
			what = fmt.Sprintf("Evaluate(%s)", id)
			r, err := s.Evaluate(ctx, id)
			if err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
			wo, ww := m.evaluate(id)
			if r.Outcome != wo {
				t.Fatalf("step %d: %s = %v, model %v", step, what, r.Outcome, wo)
			}
			if wantTh := m.lastTh; wo == lease.NoAuction && r.Threshold != 0 || wo != lease.NoAuction && r.Threshold != wantTh {
				t.Fatalf("step %d: %s threshold %d, model %d (outcome %v)", step, what, r.Threshold, wantTh, wo)
			}
			if wo == lease.Granted {
				grant(step, id, ww, r.Grant)
			}
		case k < 85:
			// An owner operation with a fence near the current one.
			it := m.item(id)
			f := max(0, it.fence-rng.IntN(2)+rng.IntN(2))
			holder := node
			if it.owner != "" && rng.IntN(3) > 0 {
				holder = it.owner
			}
			ref := lease.Ref{Item: id, Holder: holder, Fence: backendFence(id, f)}
			werr := m.check(id, holder, f)
			var err error
			switch op := rng.IntN(3); op {
			case 0:
				what = fmt.Sprintf("Renew(%s, %s, %d)", id, holder, f)
				rs, e := s.Renew(ctx, ref)
				if e != nil {
					t.Fatalf("step %d: %s: %v", step, what, e)
				}
				err = rs[0].Err
				if werr == nil {
					it.expiry = m.now + mTTL
				}
			case 1:
				what = fmt.Sprintf("Release(%s, %s, %d)", id, holder, f)
				err = s.Release(ctx, ref)
				if werr == nil {
					it.owner, it.draining = "", false
				}
			case 2:
				commit := fmt.Sprintf("c%d", step)
				drain := rng.IntN(4) == 0
				what = fmt.Sprintf("Update(%s, %s, %d, %s, drain %v)", id, holder, f, commit, drain)
				_, err = s.Update(ctx, ref, lease.Mutation{Commit: &commit, Draining: drain})
				if werr == nil {
					it.commit, it.draining = commit, it.draining || drain
					it.version++
				}
			}
			if class(err) != werr {
				t.Fatalf("step %d: %s = %v, model %v", step, what, err, werr)
			}
		case k < 93 || mc.untimed:
			what = fmt.Sprintf("Heartbeat(%s)", node)
			if err := s.Heartbeat(ctx, node); err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
			m.beats[node] = m.now
		default:
			d := 1 + rng.IntN(2)
			what = fmt.Sprintf("Advance(%d)", d)
			clk.Advance(time.Duration(d) * u)
			m.now += d
		}
		// Compare every row.
		for _, id := range items {
			it := m.item(id)
			r, err := s.Get(ctx, id)
			if it == nil {
				if !errors.Is(err, lease.ErrNotFound) {
					t.Fatalf("step %d (%s): Get(%s) = %v, want ErrNotFound", step, what, id, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d (%s): Get(%s): %v", step, what, id, err)
			}
			state := lease.Idle
			if it.owner != "" {
				state = lease.Leased
				if it.draining {
					state = lease.Draining
				}
			}
			want := fmt.Sprintf("owner=%q state=%v fence=%d round=%d bids=%d unleased=%d commit=%s minbid=%d maxbids=%d version=%d",
				it.owner, state, backendFence(id, it.fence), it.round, len(m.openBids(id)), it.unleased, it.commit, it.minBid, it.maxBids, it.version)
			got := fmt.Sprintf("owner=%q state=%v fence=%d round=%d bids=%d unleased=%d commit=%s minbid=%d maxbids=%d version=%d",
				r.Owner, r.State, r.Fence, r.Round, r.Bids, r.Unleased, r.Commit, r.MinBid, r.MaxBids, r.Version)
			if got != want {
				t.Fatalf("step %d (%s): row %s\n got %s\nwant %s", step, what, id, got, want)
			}
		}
	}
	// A run that never granted proved little about auctions.
	grants := 0
	for _, fs := range fences {
		grants += len(fs) - 1
	}
	if grants == 0 && steps >= 200 {
		t.Fatalf("%d steps and no grant: the run did not exercise auctions", steps)
	}
	t.Logf("%d steps, %d grants", steps, grants)
}
