package coordcmd_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// TestTakeoverInEachPhase adds a query node with a coordinator process
// that is SIGKILLed in one phase of the change (copy, moved, drop); a
// second coordinator process, started at once as a standby, wins the
// election once the dead one's term expires and finishes the join. Writes
// go on throughout, and probe rounds at the layout in force stay complete
// (a ready read owner always holds a delivered key); at the end every
// owner holds every key.
func TestTakeoverInEachPhase(t *testing.T) {
	bin := proctest.Build(t, "github.com/indexkit/indexkit/examples/coordinator")
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	for _, phase := range []string{"copy", "moved", "drop"} {
		t.Run(phase, func(t *testing.T) {
			prefix := etcdtest.Prefix(t, cli, "takeover")
			st := storeAt(t, prefix, c.Endpoints()...)
			y := newLayer(t, st, 3)
			keys := y.put(0, 2000)
			y.drained()
			spec := "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://") + "/" + prefix
			q4url := "http://" + freeAddr(t)
			l, _, _ := st.Load(context.Background())
			// Each phase lasts until A is killed, however fast the
			// change would pass it: q4, which the change waits for in
			// every phase, holds back until the kill. In the copy phase
			// it holds every request (the copy: 2,000 keys took 143 ms
			// once, before B was even campaigning; nothing is sent to q4
			// before that phase). In the moved phase the coordinator asks
			// q4 nothing, it only waits for every process to report the
			// moved epoch: q4 holds back taking the moved layout (the
			// phase lasted 26 ms once, between two of killAt's polls). In
			// the drop phase it holds the drop it is asked for (else A may
			// finish the drops and resign before the kill, and B takes
			// over nothing).
			held := make(chan struct{})
			switch phase {
			case "copy":
				y.holds = map[string]hold{"q4": {gate: held}}
			case "moved":
				y.holds = map[string]hold{"q4": {gate: held, phase: keyspace.PhaseMoved}}
			case "drop":
				y.holds = map[string]hold{"q4": {gate: held, path: keyspace.PathDrop}}
			}
			y.startQ("q4", q4url, l)
			args := []string{"-layout", spec, "-join", "q4=" + q4url, "-ttl", "1s", "-poll", "50ms"}
			t.Setenv("INDEXKIT_SHARD_TOKEN", token)

			// Writes and probes go on for the whole change.
			var mu sync.Mutex
			var bad []string
			rounds, partials := 0, 0
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				next := len(keys)
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					y.put(next, 50)
					next += 50
					missing, partial := y.probe(keys)
					mu.Lock()
					rounds++
					partials += partial
					bad = append(bad, missing...)
					mu.Unlock()
				}
			})

			// A is elected first; B starts as its standby.
			a := proctest.Start(t, bin, append(args, "-id", "A")...)
			a.WaitMsg("elected coordinator")
			b := proctest.Start(t, bin, append(args, "-id", "B")...)
			b.WaitMsg("campaigning")
			killed := killAt(t, st, phase, a)
			close(held)
			b.WaitMsg("elected coordinator")
			took := time.Since(killed)
			if code := b.Wait(60 * time.Second); code != 0 {
				t.Fatalf("standby coordinator exited %d:\n%s", code, b.Output())
			}
			close(stop)
			wg.Wait()
			if !strings.Contains(b.Output(), "elected coordinator") {
				t.Fatalf("B finished without being elected:\n%s", b.Output())
			}
			final, _, err := st.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if final.Phase != keyspace.PhaseStable || !slices.Contains(final.Current, "q4") {
				t.Fatalf("after the takeover the layout is epoch %d %s %v; want stable with q4", final.Epoch, final.Phase, final.Current)
			}
			y.drained()
			all := y.put(100000, 1) // one more key, routed by the final layout
			y.drained()
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Fatalf("%d incomplete answers in %d probe rounds, first: %v", len(bad), rounds, bad[:min(5, len(bad))])
			}
			missing, partial := y.probe(append(keys, all...))
			if len(missing) > 0 || partial > 0 {
				t.Fatalf("at the end: %d keys missing on a ready owner (%v), %d without a ready owner", len(missing), missing[:min(5, len(missing))], partial)
			}
			exact(t, y, final, keys)
			t.Logf("killed A in phase %s; B elected %v later and finished at epoch %d; %d probe rounds, %d partial answers, none incomplete", phase, took.Round(time.Millisecond), final.Epoch, rounds, partials)
		})
	}
}

// killAt SIGKILLs p once the layout reaches phase: "copy" or "moved" (the
// layout's Phase), or "drop" (the stable epoch after the change, when the
// old owners drop).
func killAt(t *testing.T, st *etcdlayout.Store, phase string, p *proctest.Proc) time.Time {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l, _, err := st.Load(context.Background())
		if err == nil {
			switch {
			case phase == "drop" && l.Phase == keyspace.PhaseStable && l.Epoch > 1,
				string(l.Phase) == phase:
				p.Signal(syscall.SIGKILL)
				at := time.Now()
				if code := p.Wait(10 * time.Second); code != -1 {
					t.Fatalf("A exited %d before the kill at epoch %d (%s): the phase passed too fast to test a takeover in it:\n%s", code, l.Epoch, l.Phase, p.Output())
				}
				t.Logf("A SIGKILLed at epoch %d (%s)", l.Epoch, l.Phase)
				return at
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the layout never reached phase %s:\n%s", phase, p.Output())
	return time.Time{}
}

// exact checks that each key lives on exactly its owners in the final
// layout once the old owners have dropped.
func exact(t *testing.T, y *layer, l keyspace.Layout, keys []multihash.Multihash) {
	t.Helper()
	p, err := keyspace.NewPlacement(l)
	if err != nil {
		t.Fatal(err)
	}
	nodes := p.Nodes()
	for _, mh := range keys {
		owners := p.AppendReadOwners(nil, mh)
		for name, q := range y.nodes {
			own := slices.ContainsFunc(owners, func(o int) bool { return nodes[o].Name == name })
			vs, _ := q.st.Get(context.Background(), mh)
			if own && len(vs) == 0 {
				t.Fatalf("%s: owner %s lacks it", mh.B58String(), name)
			}
			if !own && len(vs) > 0 {
				t.Fatalf("%s: %s holds it without owning it after the drop", mh.B58String(), name)
			}
		}
	}
}
