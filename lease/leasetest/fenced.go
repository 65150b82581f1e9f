package leasetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// testFencedRegister runs random concurrent histories of grants, renewals,
// owner writes and releases while time moves, and checks that the store
// acted as a fenced register: one holder per fence, fences increasing in
// real-time order, and no owner operation accepted after a later grant of
// the item had completed.
func testFencedRegister(t *testing.T, s *suite) {
	e := s.open(t)
	items := []string{"a", "b"}
	for _, id := range items {
		e.put(lease.Item{ID: id, MaxBids: 1})
	}
	type op struct {
		kind       string // grant, write, renew, release
		item, node string
		fence      lease.Fence
		call, ret  int64
	}
	var (
		stamp atomic.Int64
		mu    sync.Mutex
		hist  []op
	)
	record := func(o op) {
		mu.Lock()
		hist = append(hist, o)
		mu.Unlock()
	}
	const nodes, steps = 6, 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if !s.real {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.clk.Advance(s.u / 2)
				time.Sleep(20 * time.Microsecond)
			}
		})
	}
	var workers sync.WaitGroup
	for n := range nodes {
		node := fmt.Sprintf("n%d", n)
		workers.Go(func() {
			held := map[string]lease.Ref{}
			for i := range steps {
				id := items[(n+i)%len(items)]
				ref, have := held[id]
				c := stamp.Add(1)
				switch {
				case !have:
					res, err := e.s.Bid(e.ctx, id, node, int64(n))
					r := stamp.Add(1)
					if err == nil && res.Result != nil && res.Result.Grant != nil {
						g := res.Result.Grant
						record(op{"grant", id, g.Holder, g.Fence, c, r})
						if g.Holder == node {
							held[id] = g.Ref
						}
					}
				case i%7 == 0:
					err := e.s.Release(e.ctx, ref)
					r := stamp.Add(1)
					if err == nil {
						record(op{"release", id, node, ref.Fence, c, r})
					}
					delete(held, id)
				case i%3 == 0:
					rs, err := e.s.Renew(e.ctx, ref)
					r := stamp.Add(1)
					if err == nil && rs[0].Err == nil {
						record(op{"renew", id, node, ref.Fence, c, r})
					} else {
						delete(held, id)
					}
				default:
					v := fmt.Sprintf("%s@%d", node, ref.Fence)
					_, err := e.s.Update(e.ctx, ref, lease.Mutation{Commit: &v})
					r := stamp.Add(1)
					if err == nil {
						record(op{"write", id, node, ref.Fence, c, r})
					} else if !errors.Is(err, lease.ErrNotHeld) && !errors.Is(err, lease.ErrStaleFence) {
						t.Errorf("Update: %v", err)
					} else {
						delete(held, id)
					}
				}
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()

	grants := map[string]map[lease.Fence]op{}
	for _, id := range items {
		grants[id] = map[lease.Fence]op{}
	}
	n := 0
	for _, o := range hist {
		if o.kind == "grant" {
			if prev, dup := grants[o.item][o.fence]; dup {
				t.Fatalf("%s: fence %d granted twice: %+v and %+v", o.item, o.fence, prev, o)
			}
			grants[o.item][o.fence] = o
			n++
		}
	}
	if n < 4 {
		t.Fatalf("only %d grants in the history; the test exercised too little", n)
	}
	for _, o := range hist {
		for f, g := range grants[o.item] {
			// Grants in real-time order have increasing fences.
			if o.kind == "grant" && g.ret < o.call && f >= o.fence {
				t.Fatalf("%s: grant fence %d (called at %d) after grant fence %d (done at %d)", o.item, o.fence, o.call, f, g.ret)
			}
			// No owner operation with an older fence is accepted once a
			// newer grant has completed.
			if o.kind != "grant" && g.ret < o.call && f > o.fence {
				t.Fatalf("%s: %s by %s with fence %d accepted at %d after grant of fence %d done at %d", o.item, o.kind, o.node, o.fence, o.call, f, g.ret)
			}
		}
		if o.kind != "grant" {
			g, ok := grants[o.item][o.fence]
			if !ok || g.node != o.node {
				t.Fatalf("%s: %s by %s with fence %d, granted to %+v", o.item, o.kind, o.node, o.fence, g)
			}
		}
	}
}
