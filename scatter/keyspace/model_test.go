package keyspace_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// The model test runs membership changes, crashes and writes against a
// simulated world whose routing comes from Placement and whose
// coordinator is NextAction, and checks the promise of the layer: a
// lookup of an indexed multihash never comes back incomplete without
// saying so. Every ready read owner a front end asks must hold every key
// whose writes have all been delivered; an owner that is down or not
// ready is skipped, and when every owner is, the answer says partial.

type msg struct {
	key   int
	epoch uint64
}

type qnode struct {
	name        string
	alive       bool
	epoch       uint64
	holds       map[int]bool
	ready       bool // since its last start, every writer said nothing waits for it
	copyTask    *keyspace.Task
	copyPending []int // keys still to copy
	dropTask    *keyspace.Task
}

// fataler is what the world reports a broken promise to: the test, or,
// in the deliberate-bug check, a recorder.
type fataler interface {
	Fatalf(format string, args ...any)
}

type world struct {
	t        fataler
	rng      *rand.Rand
	file     keyspace.Layout // the layout file: the source of the epoch
	places   map[uint64]*keyspace.Placement
	keys     []multihash.Multihash
	nodes    map[string]*qnode
	writers  []string
	wEpoch   map[string]uint64
	outbox   map[string]map[string][]msg // writer -> dest -> FIFO
	fronts   []uint64                    // each front end's epoch
	goal     keyspace.Goal
	goalDone bool
	nextName int
	step     int
	copies   int
	changes  int
	partials int
	// bug switches, for the deliberate-bug checks
	skipBarrier bool
	settling    bool
	// store, when set, is the layout store every publish and load goes
	// through (the file or etcd), instead of the world's own record alone:
	// processes read the epoch from it and a rival coordinator, holding
	// an older revision, tries to publish over each epoch and must lose.
	store    keyspace.LayoutStore
	rev      keyspace.Revision
	oldRev   keyspace.Revision // a revision already replaced
	rivals   int               // rival publishes refused
	rivalWon bool              // the deliberate bug: a rival's publish succeeded
}

// loaded is the layout in force as a process reads it: from the store
// when the world has one, which must agree with the world's record.
func (w *world) loaded() keyspace.Layout {
	if w.store == nil {
		return w.file
	}
	l, rev, err := w.store.Load(context.Background())
	if err != nil {
		w.t.Fatalf("step %d: load the layout: %v", w.step, err)
	}
	if rev != w.rev || l.Epoch != w.file.Epoch {
		w.t.Fatalf("step %d: the store holds epoch %d at revision %d; the coordinator published epoch %d at %d", w.step, l.Epoch, rev, w.file.Epoch, w.rev)
	}
	return l
}

func (w *world) place(e uint64) *keyspace.Placement {
	if p, ok := w.places[e]; ok {
		return p
	}
	w.t.Fatalf("no placement for epoch %d", e)
	return nil
}

func (w *world) publish(l keyspace.Layout) {
	p, err := keyspace.NewPlacement(l)
	if err != nil {
		w.t.Fatalf("step %d: publish %+v: %v", w.step, l, err)
	}
	w.places[l.Epoch] = p
	if w.store != nil {
		ctx := context.Background()
		if w.oldRev != 0 {
			// A rival coordinator that read an older epoch publishes.
			rival := l.Clone()
			rival.Writers = append(rival.Writers, "rival")
			if _, err := w.store.Publish(ctx, w.oldRev, rival); err == nil {
				w.rivalWon = true
				w.t.Fatalf("step %d: a publish over revision %d, replaced since, succeeded", w.step, w.oldRev)
			} else if !errors.Is(err, keyspace.ErrConflict) {
				w.t.Fatalf("step %d: a rival publish failed without ErrConflict: %v", w.step, err)
			}
			w.rivals++
		}
		rev, err := w.store.Publish(ctx, w.rev, l)
		if err != nil {
			w.t.Fatalf("step %d: publish epoch %d over revision %d: %v", w.step, l.Epoch, w.rev, err)
		}
		w.oldRev, w.rev = w.rev, rev
	}
	w.file = l
	for _, n := range l.Nodes {
		if w.nodes[n.Name] == nil {
			w.nodes[n.Name] = &qnode{name: n.Name, alive: true, epoch: l.Epoch, holds: map[int]bool{}}
		}
	}
}

func newWorld(t fataler, seed uint64, nodes int) *world {
	return newWorldOn(t, seed, nodes, nil)
}

// newWorldOn is newWorld whose layout lives in st (nil: the world's
// record only); st must hold no layout yet.
func newWorldOn(t fataler, seed uint64, nodes int, st keyspace.LayoutStore) *world {
	w := &world{store: st,
		t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		places: map[uint64]*keyspace.Placement{}, nodes: map[string]*qnode{},
		writers: []string{"w1", "w2"}, wEpoch: map[string]uint64{},
		outbox: map[string]map[string][]msg{}, fronts: []uint64{1, 1},
	}
	l := keyspace.Layout{Epoch: 1, Replication: 2, Vnodes: 16, Phase: keyspace.PhaseStable, Writers: w.writers}
	for range nodes {
		n := w.newName()
		l.Nodes = append(l.Nodes, keyspace.Node{Name: n, URL: "http://" + n})
		l.Current = append(l.Current, n)
	}
	w.publish(l)
	for _, wr := range w.writers {
		w.wEpoch[wr] = 1
		w.outbox[wr] = map[string][]msg{}
	}
	w.goalDone = true
	return w
}

func (w *world) newName() string {
	w.nextName++
	return fmt.Sprintf("q%d", w.nextName)
}

func (w *world) mh(k int) multihash.Multihash {
	for len(w.keys) <= k {
		mh, _ := multihash.Sum([]byte(fmt.Sprint("key", len(w.keys))), multihash.SHA2_256, -1)
		w.keys = append(w.keys, mh)
	}
	return w.keys[k]
}

// ready: alive, and since its start every writer has said (in a
// heartbeat) that nothing waits for it. After that it stays ready: what
// writers route to it later is ordinary delivery lag.
func (w *world) ready(n *qnode) bool {
	if n == nil || !n.alive {
		return false
	}
	if !n.ready {
		for _, wr := range w.writers {
			if len(w.outbox[wr][n.name]) > 0 {
				return false
			}
		}
		n.ready = true
	}
	return true
}

func (w *world) write() {
	wr := w.writers[w.rng.IntN(len(w.writers))]
	k := len(w.keys)
	w.mh(k)
	p := w.place(w.wEpoch[wr])
	nodes := p.Nodes()
	for _, o := range p.AppendWriteOwners(nil, w.keys[k]) {
		d := nodes[o].Name
		w.outbox[wr][d] = append(w.outbox[wr][d], msg{key: k, epoch: w.wEpoch[wr]})
	}
}

func (w *world) deliver() {
	wr := w.writers[w.rng.IntN(len(w.writers))]
	if wr == "w2" && (w.step/400)%2 == 0 && w.rng.IntN(10) > 0 {
		return // every other 400 steps w2's link is slow: its batches linger
	}
	for _, d := range sortedKeys(w.outbox[wr]) {
		q := w.outbox[wr][d]
		n := w.nodes[d]
		if len(q) == 0 || n == nil || !n.alive {
			continue
		}
		k := min(len(q), 1+w.rng.IntN(8))
		for _, m := range q[:k] {
			n.holds[m.key] = true
		}
		w.outbox[wr][d] = q[k:]
		return
	}
}

// removed drops the outboxes of nodes no longer in the layout, as a
// writer does when it loads a layout without them.
func (w *world) prune(wr string) {
	p := w.place(w.wEpoch[wr])
	for d := range w.outbox[wr] {
		if p.Node(d) < 0 {
			delete(w.outbox[wr], d)
		}
	}
}

func (w *world) observe() keyspace.Observation {
	obs := keyspace.Observation{Layout: w.file, Query: map[string]keyspace.Status{}, Ingest: map[string]keyspace.Status{}, Front: map[string]keyspace.Status{}, Fronts: len(w.fronts)}
	for name, n := range w.nodes {
		if !n.alive {
			continue
		}
		obs.Query[name] = keyspace.Status{Role: "query", Name: name, Epoch: n.epoch, Ready: w.ready(n), Copy: n.copyTask, Drop: n.dropTask}
	}
	for _, wr := range w.writers {
		st := keyspace.Status{Role: "ingest", Name: wr, Epoch: w.wEpoch[wr], Owners: map[string]keyspace.OutboxStatus{}}
		for d, q := range w.outbox[wr] {
			o := keyspace.OutboxStatus{Pending: len(q)}
			if len(q) > 0 {
				o.OldestEpoch = q[0].epoch
			}
			st.Owners[d] = o
		}
		obs.Ingest[wr] = st
	}
	for i, e := range w.fronts {
		obs.Front[fmt.Sprint("f", i)] = keyspace.Status{Role: "frontend", Epoch: e}
	}
	return obs
}

func (w *world) coordinate() {
	obs := w.observe()
	if w.skipBarrier {
		// The deliberate bug: copy without waiting for the writers to
		// deliver what they routed under the older epoch.
		for wr := range obs.Ingest {
			st := obs.Ingest[wr]
			st.Owners = nil
			obs.Ingest[wr] = st
		}
	}
	a := keyspace.NextAction(obs, w.goal)
	switch a.Kind {
	case keyspace.ActPublish:
		w.publish(a.Layout)
		w.changes++
	case keyspace.ActCopy:
		p := w.place(w.file.Epoch)
		for _, name := range a.Nodes {
			n := w.nodes[name]
			if !n.alive {
				continue
			}
			n.copyTask = &keyspace.Task{Epoch: w.file.Epoch}
			self := p.Node(name)
			nodes := p.Nodes()
			// The sources' exports read a snapshot of their stores taken
			// now; the copy then applies it a few keys at a time.
			n.copyPending = n.copyPending[:0]
			for k := range w.keys {
				if !p.Gains(self, w.keys[k]) {
					continue
				}
				src := p.Source(w.keys[k], func(o int) bool {
					s := w.nodes[nodes[o].Name]
					return s == n || !w.ready(s)
				})
				if src < 0 {
					n.copyTask.Error = "no source"
					break
				}
				if w.nodes[nodes[src].Name].holds[k] {
					n.copyPending = append(n.copyPending, k)
				}
			}
		}
	case keyspace.ActDrop:
		p := w.place(w.file.Epoch)
		for _, name := range a.Nodes {
			n := w.nodes[name]
			if !n.alive || n.epoch != w.file.Epoch {
				continue
			}
			self := p.Node(name)
			for k := range n.holds {
				if !p.Owns(self, w.keys[k]) {
					delete(n.holds, k)
				}
			}
			n.dropTask = &keyspace.Task{Epoch: w.file.Epoch, Done: true}
		}
	case keyspace.ActDone:
		w.goalDone = true
	}
}

// copyStep applies a few keys of a running copy.
func (w *world) copyStep() {
	for _, name := range sortedKeys(w.nodes) {
		n := w.nodes[name]
		if !n.alive || n.copyTask == nil || n.copyTask.Done || n.copyTask.Error != "" {
			continue
		}
		for i := 0; i < 5 && len(n.copyPending) > 0; i++ {
			n.holds[n.copyPending[0]] = true
			n.copyPending = n.copyPending[1:]
			w.copies++
		}
		if len(n.copyPending) == 0 {
			n.copyTask.Done = true
		}
		return
	}
}

func (w *world) reload() {
	e := w.loaded().Epoch
	switch i := w.rng.IntN(3); i {
	case 0:
		for _, wr := range w.writers {
			if w.wEpoch[wr] < e {
				w.wEpoch[wr] = e
				w.prune(wr)
				return
			}
		}
	case 1:
		for i := range w.fronts {
			if w.fronts[i] < e {
				w.fronts[i] = e
				return
			}
		}
	default:
		for _, name := range sortedKeys(w.nodes) {
			n := w.nodes[name]
			if n.alive && n.epoch < e {
				n.epoch = e
				if n.copyTask != nil && n.copyTask.Epoch != e {
					n.copyTask = nil
				}
				return
			}
		}
	}
}

func (w *world) crashOrRestart() {
	names := sortedKeys(w.nodes)
	n := w.nodes[names[w.rng.IntN(len(names))]]
	if n.alive {
		down := 0
		for _, x := range w.nodes {
			if !x.alive {
				down++
			}
		}
		if down > 0 && w.rng.IntN(4) > 0 {
			return // mostly one crash at a time; sometimes two
		}
		n.alive, n.ready = false, false
		n.copyPending = nil
		if n.copyTask != nil && !n.copyTask.Done {
			n.copyTask = nil // a killed copy restarts when asked again
		}
		return
	}
	n.alive = true
	n.epoch = w.loaded().Epoch // a restart loads the layout
}

// sample picks the keys a check looks at: all of them while settling,
// else 100 at random and the 30 newest.
func (w *world) sample() []int {
	if w.settling || len(w.keys) <= 130 {
		out := make([]int, len(w.keys))
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, 130)
	for range 100 {
		out = append(out, w.rng.IntN(len(w.keys)))
	}
	for k := len(w.keys) - 30; k < len(w.keys); k++ {
		out = append(out, k)
	}
	return out
}

// check is the promise: for every key whose writes are all delivered,
// every front end's read owners that are ready hold it.
func (w *world) check() {
	pending := map[int]bool{}
	for _, qs := range w.outbox {
		for d, q := range qs {
			for _, m := range q {
				if n := w.nodes[d]; n != nil {
					pending[m.key] = true
				}
			}
		}
	}
	keys := w.sample()
	for _, e := range w.fronts {
		if e+1 < w.file.Epoch {
			w.t.Fatalf("step %d: a front end reads epoch %d while the file is at %d", w.step, e, w.file.Epoch)
		}
		p := w.place(e)
		nodes := p.Nodes()
		for _, k := range keys {
			if pending[k] {
				continue
			}
			asked := 0
			for _, o := range p.AppendReadOwners(nil, w.keys[k]) {
				n := w.nodes[nodes[o].Name]
				if !w.ready(n) {
					continue
				}
				asked++
				if !n.holds[k] {
					w.t.Fatalf("step %d: front end at epoch %d (file %d, phase %s): ready owner %s lacks key %d; lookup incomplete without saying so",
						w.step, e, w.file.Epoch, w.file.Phase, n.name, k)
				}
			}
			if asked == 0 {
				w.partials++
			}
		}
	}
}

func (w *world) run(steps int) {
	for w.step = 0; w.step < steps; w.step++ {
		if w.goalDone && w.rng.IntN(20) == 0 {
			w.goalDone = false
			if len(w.file.Current) > 3 && w.rng.IntN(2) == 0 {
				w.goal = keyspace.Goal{Leave: w.file.Current[w.rng.IntN(len(w.file.Current))]}
			} else {
				n := w.newName()
				w.goal = keyspace.Goal{Join: &keyspace.Node{Name: n, URL: "http://" + n}}
			}
		}
		switch r := w.rng.IntN(100); {
		case r < 25:
			w.write()
		case r < 65:
			w.deliver()
		case r < 75:
			w.reload()
		case r < 85:
			w.copyStep()
		case r < 87:
			w.crashOrRestart()
		default:
			if !w.goalDone {
				w.coordinate()
			}
		}
		if w.step%5 == 0 {
			w.check()
		}
	}
}

// settle stops writing and crashing and lets everything finish: every
// node up, every outbox delivered, the goal done.
func (w *world) settle() {
	w.settling = true
	for _, n := range w.nodes {
		if !n.alive {
			n.alive, n.epoch = true, w.file.Epoch
		}
	}
	for i := 0; i < 100000 && !(w.goalDone && w.quiet()); i++ {
		w.step++
		w.deliver()
		w.reload()
		w.copyStep()
		if !w.goalDone {
			w.coordinate()
		}
	}
	if !w.goalDone || !w.quiet() {
		w.t.Fatalf("did not settle: goal %s done=%v, layout %+v, %+v", w.goal, w.goalDone, w.file, w.observe())
	}
	w.check()
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func (w *world) quiet() bool {
	for _, qs := range w.outbox {
		for _, q := range qs {
			if len(q) > 0 {
				return false
			}
		}
	}
	return true
}

func TestModelOwnership(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			modelRun(t, newWorld(t, seed, 4), 8000)
		})
	}
}

// TestModelOnFileStore runs the model with its layout in a FileStore:
// every publish a compare-and-swap on the file, every load a read of it,
// and a rival coordinator that must lose each race.
func TestModelOnFileStore(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			st := &keyspace.FileStore{Path: filepath.Join(t.TempDir(), "layout.json")}
			w := newWorldOn(t, seed, 4, st)
			modelRun(t, w, 4000)
			if w.rivals == 0 {
				t.Fatal("no rival publish was tried: the run tests no compare-and-swap")
			}
		})
	}
}

func modelRun(t *testing.T, w *world, steps int) {
	t.Helper()
	w.run(steps)
	w.settle()
	// After a change completes and the old owners drop, every key
	// lives on exactly its owners.
	p := w.place(w.file.Epoch)
	nodes := p.Nodes()
	for k := range w.keys {
		owners := p.AppendReadOwners(nil, w.keys[k])
		for name, n := range w.nodes {
			own := slices.ContainsFunc(owners, func(o int) bool { return nodes[o].Name == name })
			if own && !n.holds[k] {
				t.Fatalf("key %d: owner %s lacks it after settling", k, name)
			}
			if !own && n.holds[k] && p.Node(name) >= 0 {
				t.Fatalf("key %d: %s holds it without owning it after the drop", k, name)
			}
		}
	}
	t.Logf("%d keys, %d epochs published, %d keys copied, %d partial lookups, %d rival publishes refused, final ring %v",
		len(w.keys), w.changes, w.copies, w.partials, w.rivals, w.file.Current)
	if w.changes == 0 || w.copies == 0 {
		t.Fatalf("the run made no membership change (%d) or copy (%d): it tests nothing", w.changes, w.copies)
	}
}

// TestModelCatchesSkippedBarrier checks that the model can fail: a
// coordinator that copies before the writers deliver what they routed
// under the older epoch loses keys on the new owners.
func TestModelCatchesSkippedBarrier(t *testing.T) {
	failed := 0
	for seed := range uint64(24) {
		if caught(seed) {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("with the delivery barrier skipped, no run found an incomplete lookup")
	}
	t.Logf("%d of 24 runs caught the skipped barrier", failed)
}

type recorder struct{ msg string }

type broken struct{}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(broken{})
}

// caught runs the world of seed with the barrier skipped and reports
// whether it found a broken promise.
func caught(seed uint64) (found bool) {
	r := &recorder{}
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(broken); !ok {
				panic(v)
			}
			found = true
		}
	}()
	w := newWorld(r, seed, 4)
	w.skipBarrier = true
	w.run(8000)
	w.settle()
	return false
}

// TestModelOnEtcd runs the model with its layout on a real etcd: every
// publish a transaction on the layout key's revision, every load a read,
// and a rival coordinator that must lose each race.
func TestModelOnEtcd(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	for seed := range uint64(2) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			j, err := etcdjson.New(c.Endpoints(), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			st := etcdlayout.New(j, etcdtest.Prefix(t, cli, "model"))
			defer st.Close()
			w := newWorldOn(t, seed, 4, st)
			modelRun(t, w, 8000)
			if w.rivals == 0 {
				t.Fatal("no rival publish was tried: the run tests no compare-and-swap")
			}
		})
	}
}
