package querynode_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

const nKeys = 600

// change is a cluster in the middle of a join: the stable layout, the
// copy layout, the writer, the oracle and the keys ever written.
type change struct {
	c      map[string]*node
	l1, l2 keyspace.Layout
	w      *tw
	o      *oracle
	keys   []multihash.Multihash
	joiner string
}

// preload writes the initial data under l1 to every node of it: three
// providers, four contexts each, every key in one or two contexts, and a
// provider record.
func (ch *change) preload(t *testing.T) {
	t.Helper()
	var ops []keyspace.Op
	for i := range nKeys {
		ch.keys = append(ch.keys, mhOf(t, i))
	}
	for p := 1; p <= 3; p++ {
		for c := 1; c <= 4; c++ {
			var ks []int
			for i := range nKeys {
				if i%3 == p-1 || (i%7 == c && p == 1) {
					if i%4 == c-1 || i%7 == c {
						ks = append(ks, i)
					}
				}
			}
			ops = append(ops, putOp(t, p, c, fmt.Sprintf("md-%d-%d", p, c), ks...))
		}
	}
	ops = append(ops, keyspace.Op{Kind: keyspace.OpPutProvider, Provider: &store.ProviderInfo{AddrInfo: peerInfo(t, 1)}})
	ch.apply(ops)
	ch.w.sendAll(t, ch.c, ch.l1, ops)
}

func (ch *change) apply(ops []keyspace.Op) {
	for _, op := range ops {
		ch.o.apply(op)
	}
}

// gained lists the keys node gains in l2.
func (ch *change) gained(t *testing.T, name string) []int {
	p, err := keyspace.NewPlacement(ch.l2)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i, mh := range ch.keys {
		if p.Gains(p.Node(name), mh) {
			out = append(out, i)
		}
	}
	return out
}

// check compares what node holds for each key it gains with the oracle.
func (ch *change) check(t *testing.T, name string) {
	t.Helper()
	p, _ := keyspace.NewPlacement(ch.l2)
	me := p.Node(name)
	bad := 0
	for _, mh := range ch.keys {
		if !p.Gains(me, mh) {
			continue
		}
		want, have := ch.o.get(mh), got(t, ch.c[name].st, mh)
		if !slices.Equal(want, have) {
			if bad++; bad <= 5 {
				t.Errorf("%s: key %x: have %v, want %v", name, []byte(mh[len(mh)-4:]), have, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d gained keys differ from the oracle", name, bad)
	}
}

func newChange(t *testing.T, kind string, current []string, joiner string, r int) *change {
	all := append(slices.Clone(current), joiner)
	c := cluster(t, kind, all...)
	l1 := keyspace.Layout{Epoch: 1, Replication: r, Nodes: nodesOf(c, current...), Current: current, Phase: keyspace.PhaseStable}
	l2, err := l1.Join(nodesOf(c, joiner)[0])
	if err != nil {
		t.Fatal(err)
	}
	ch := &change{c: c, l1: l1, l2: l2, w: newTW("w1"), o: newOracle(), joiner: joiner}
	for _, name := range current {
		startNode(t, c[name], l1)
	}
	ch.preload(t)
	for _, name := range current {
		if err := c[name].SetLayout(l2); err != nil {
			t.Fatal(err)
		}
	}
	startNode(t, c[joiner], l2)
	return ch
}

// raceOps are live writes of the copy phase that the joiner receives
// before the copy and the sources only after it: the sources' exports are
// older than them.
func raceOps(t *testing.T, gained []int) []keyspace.Op {
	if len(gained) < 20 {
		t.Fatalf("only %d keys gained", len(gained))
	}
	var removed []int
	for _, k := range gained[:10] {
		removed = append(removed, k)
	}
	return []keyspace.Op{
		removeOp(t, 1, 1, removed...),
		removeOp(t, 2, 2, removed...),
		removeOp(t, 3, 3, removed...),
		removeOp(t, 1, 4, removed...),
		{Kind: keyspace.OpUpdateMetadata, Value: store.Value{ProviderID: provider(t, 1), ContextID: []byte{1}, Metadata: []byte("md-updated")}},
		{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: provider(t, 2), ContextID: []byte{2}}},
		{Kind: keyspace.OpRemoveProvider, Value: store.Value{ProviderID: provider(t, 3)}},
		// Removed, then put again live: present, with the live metadata.
		removeOp(t, 1, 3, gained[10:14]...),
		putOp(t, 1, 3, "md-3-again", gained[10:12]...),
		// A context removed and put again live: only its live keys.
		{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: provider(t, 2), ContextID: []byte{4}}},
		putOp(t, 2, 4, "md-2-4-again", gained[14:16]...),
		// A provider record written live is newer than the copied one.
		{Kind: keyspace.OpPutProvider, Provider: &store.ProviderInfo{AddrInfo: peerInfo(t, 1), LastError: "live"}},
	}
}

// checkRecord checks that node keeps the live provider record of raceOps.
func (ch *change) checkRecord(t *testing.T, name string) {
	t.Helper()
	info, err := ch.c[name].st.Provider(context.Background(), provider(t, 1))
	if err != nil || info.LastError != "live" {
		t.Fatalf("%s: provider record %+v, %v; want the live one (LastError \"live\"), not the copied one", name, info, err)
	}
}

func TestCopyJoin(t *testing.T) {
	for _, kind := range []string{"memory", "pebble", "pebble-prefix", "pebble-nopop"} {
		t.Run(kind, func(t *testing.T) {
			ch := newChange(t, kind, []string{"q1", "q2"}, "q3", 2)
			gained := ch.gained(t, "q3")
			race := raceOps(t, gained)
			ch.apply(race)
			r := route(t, ch.l2, race)
			ch.w.send(t, ch.c["q3"], 2, r["q3"])

			if code, body := postEpoch(t, ch.c["q3"].srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
				t.Fatalf("copy: %d %s", code, body)
			}
			// Live writes while the copy runs: more removals and puts of
			// gained keys. Each outbox delivers in order, so the sources
			// get them after the race writes, once the copy is done.
			late := []map[string][]keyspace.Op{r}
			for i := 0; i < 5; i++ {
				ops := []keyspace.Op{
					removeOp(t, 1, 2, gained[20+i*3:23+i*3]...),
					putOp(t, 3, 1, "md-3-1-live", gained[40+i]),
					{Kind: keyspace.OpUpdateMetadata, Value: store.Value{ProviderID: provider(t, 1), ContextID: []byte{3}, Metadata: []byte(fmt.Sprintf("md-1-3-v%d", i))}},
				}
				ch.apply(ops)
				rr := route(t, ch.l2, ops)
				ch.w.send(t, ch.c["q3"], 2, rr["q3"])
				late = append(late, rr)
			}
			tk := waitTask(t, ch.c["q3"], 2, copyTask)
			if tk.Error != "" || tk.Keys == 0 {
				t.Fatalf("copy task: %+v", tk)
			}
			// POST again: it says it has.
			if code, body := postEpoch(t, ch.c["q3"].srv.URL+keyspace.PathCopy, 2); code != http.StatusOK {
				t.Fatalf("copy again: %d %s", code, body)
			}
			// The sources get the race writes late.
			for _, rr := range late {
				ch.w.send(t, ch.c["q1"], 2, rr["q1"])
				ch.w.send(t, ch.c["q2"], 2, rr["q2"])
			}
			ch.check(t, "q3")
			ch.checkRecord(t, "q3")

			// Moved, stable, drop: every node holds exactly what it owns.
			l3, _ := ch.l2.Advance()
			l4, _ := l3.Advance()
			for _, name := range []string{"q1", "q2", "q3"} {
				for _, l := range []keyspace.Layout{l3, l4} {
					if err := ch.c[name].SetLayout(l); err != nil {
						t.Fatal(err)
					}
				}
			}
			p4, _ := keyspace.NewPlacement(l4)
			for _, name := range []string{"q1", "q2", "q3"} {
				if code, body := postEpoch(t, ch.c[name].srv.URL+keyspace.PathDrop, l4.Epoch); code != http.StatusAccepted {
					t.Fatalf("drop: %d %s", code, body)
				}
			}
			for _, name := range []string{"q1", "q2", "q3"} {
				n := ch.c[name]
				tk := waitTask(t, n, l4.Epoch, dropTask)
				if tk.Error != "" {
					t.Fatalf("%s drop: %+v", name, tk)
				}
				var dropped int64
				for _, mh := range ch.keys {
					have, want := got(t, n.st, mh), ch.o.get(mh)
					if p4.Owns(p4.Node(name), mh) {
						if !slices.Equal(have, want) {
							t.Fatalf("%s owns %x: have %v, want %v", name, []byte(mh), have, want)
						}
					} else {
						if len(have) != 0 {
							t.Fatalf("%s does not own %x but holds %v after the drop", name, []byte(mh), have)
						}
						if name != "q3" && len(want) > 0 {
							dropped++
						}
					}
				}
				// A store without populations drops by ranges, whose
				// keys go uncounted; the others key by key.
				if byRanges := kind == "pebble-nopop"; byRanges != (tk.Ranges > 0) {
					t.Fatalf("%s drop on %s: %d range deletions, by ranges %v", name, kind, tk.Ranges, byRanges)
				}
				if name != "q3" && (dropped == 0 || tk.Keys < dropped && tk.Ranges == 0) {
					t.Fatalf("%s dropped %d keys, expected at least %d", name, tk.Keys, dropped)
				}
			}
		})
	}
}

// The guard survives a restart of the joiner: a live removal acknowledged
// before the crash still stops the copy from bringing the key back.
func TestCopyGuardSurvivesRestart(t *testing.T) {
	ch := newChange(t, "pebble", []string{"q1", "q2"}, "q3", 2)
	gained := ch.gained(t, "q3")
	race := raceOps(t, gained)
	ch.apply(race)
	r := route(t, ch.l2, race)
	ch.w.send(t, ch.c["q3"], 2, r["q3"])
	q3 := ch.c["q3"]
	q3.close(t)
	startNode(t, q3, ch.l2)
	if code, body := postEpoch(t, q3.srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
		t.Fatalf("copy: %d %s", code, body)
	}
	if tk := waitTask(t, q3, 2, copyTask); tk.Error != "" {
		t.Fatalf("copy: %+v", tk)
	}
	ch.check(t, "q3")
	ch.checkRecord(t, "q3")
}

// cutExport cuts every export stream of h after n bytes.
func cutExport(h http.Handler, n int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != keyspace.PathExport {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&cutWriter{ResponseWriter: w, left: n}, r)
	})
}

type cutWriter struct {
	http.ResponseWriter
	left int
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.ErrClosedPipe
	}
	if len(b) > c.left {
		n, _ := c.ResponseWriter.Write(b[:c.left])
		c.left = 0
		return n, io.ErrClosedPipe
	}
	c.left -= len(b)
	return c.ResponseWriter.Write(b)
}

// A source whose export breaks off: its keys come from their next owners.
func TestCopySourceFailure(t *testing.T) {
	ch := newChange(t, "memory", []string{"q1", "q2", "q3"}, "q4", 2)
	ch.c["q1"].srv.set(cutExport(ch.c["q1"].Handler(), 300))
	if code, body := postEpoch(t, ch.c["q4"].srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
		t.Fatalf("copy: %d %s", code, body)
	}
	if tk := waitTask(t, ch.c["q4"], 2, copyTask); tk.Error != "" {
		t.Fatalf("copy: %+v", tk)
	}
	ch.check(t, "q4")
}

func TestCopyBothOwnersFail(t *testing.T) {
	ch := newChange(t, "memory", []string{"q1", "q2", "q3"}, "q4", 2)
	ch.c["q1"].srv.set(cutExport(ch.c["q1"].Handler(), 300))
	ch.c["q2"].srv.Close()
	if code, body := postEpoch(t, ch.c["q4"].srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
		t.Fatalf("copy: %d %s", code, body)
	}
	tk := waitTask(t, ch.c["q4"], 2, copyTask)
	if !strings.Contains(tk.Error, "no source left") {
		t.Fatalf("copy with two of the owners failing: %+v", tk)
	}
	// A failed copy starts again when posted again.
	ch.c["q1"].srv.set(ch.c["q1"].Handler())
	if code, body := postEpoch(t, ch.c["q4"].srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
		t.Fatalf("copy after a failure: %d %s", code, body)
	}
	waitTask(t, ch.c["q4"], 2, copyTask)
}

// The export stream: provider records first, frames numbered from 1,
// only keys the destination gains from this source, and an empty frame at
// the end.
func TestExportStream(t *testing.T) {
	ch := newChange(t, "memory", []string{"q1", "q2"}, "q3", 2)
	get := func(q string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, ch.c["q1"].srv.URL+keyspace.PathExport+q, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get("?epoch=1&dest=q3")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "epoch 1, node at epoch 2") {
		t.Fatalf("export of an old epoch: %d %s", resp.StatusCode, b)
	}
	resp = get("?epoch=2&dest=q3")
	defer resp.Body.Close()
	p, _ := keyspace.NewPlacement(ch.l2)
	br := bufio.NewReader(resp.Body)
	var keys int
	for frame := uint64(1); ; frame++ {
		size, err := binary.ReadUvarint(br)
		if err != nil {
			t.Fatal(err)
		}
		if size == 0 {
			break
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(br, buf); err != nil {
			t.Fatal(err)
		}
		bt, err := keyspace.DecodeBatch(buf)
		if err != nil {
			t.Fatal(err)
		}
		if bt.Writer != "q1" || bt.Seq != frame || bt.Epoch != 2 {
			t.Fatalf("frame header %+v", bt)
		}
		for _, op := range bt.Ops {
			switch {
			case frame == 1 && op.Kind == keyspace.OpPutProvider:
			case op.Kind == keyspace.OpPut:
				for _, mh := range op.Multihashes {
					if !p.Gains(p.Node("q3"), mh) || p.Source(mh, nil) != p.Node("q1") {
						t.Fatalf("exported %x, which q3 does not gain from q1", []byte(mh))
					}
					keys++
				}
			default:
				t.Fatalf("frame %d: op %s", frame, op.Kind)
			}
		}
	}
	if keys == 0 {
		t.Fatal("nothing exported")
	}
}
