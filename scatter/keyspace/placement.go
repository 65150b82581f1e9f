package keyspace

import (
	"fmt"
	"slices"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
)

// Placement answers, for one [Layout], which query nodes hold a key: the
// ones a find reads and the ones a write goes to. Owners are indexes into
// the layout's Nodes. A Placement is immutable and safe for concurrent use.
type Placement struct {
	layout Layout
	cur    *scatter.Ring
	next   *scatter.Ring // nil when stable
	curIdx []int         // ring index -> Nodes index
	nxtIdx []int
}

// NewPlacement validates l and builds its rings.
func NewPlacement(l Layout) (*Placement, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l = l.Clone()
	vnodes := l.Vnodes
	if vnodes == 0 {
		vnodes = scatter.DefaultVnodes
	}
	p := &Placement{layout: l}
	var err error
	if p.cur, p.curIdx, err = ringOf(&l, l.Current, vnodes); err != nil {
		return nil, err
	}
	if l.Phase != PhaseStable {
		if p.next, p.nxtIdx, err = ringOf(&l, l.Next, vnodes); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func ringOf(l *Layout, names []string, vnodes int) (*scatter.Ring, []int, error) {
	r, err := scatter.NewRing(names, vnodes, l.Replication)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidLayout, err)
	}
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = slices.IndexFunc(l.Nodes, func(x Node) bool { return x.Name == n })
	}
	return r, idx, nil
}

// Layout returns the layout p was built from.
func (p *Placement) Layout() Layout { return p.layout.Clone() }

// Epoch is the layout's epoch.
func (p *Placement) Epoch() uint64 { return p.layout.Epoch }

// Nodes returns the layout's nodes; owners index into it.
func (p *Placement) Nodes() []Node { return slices.Clone(p.layout.Nodes) }

// Node returns the index of the node named name, or -1.
func (p *Placement) Node(name string) int {
	return slices.IndexFunc(p.layout.Nodes, func(x Node) bool { return x.Name == name })
}

// ReadRing is the ring finds are routed on: Current until the copies of a
// change are complete, Next from PhaseMoved on. Its names are node names.
func (p *Placement) ReadRing() *scatter.Ring {
	if p.layout.Phase == PhaseMoved {
		return p.next
	}
	return p.cur
}

// ReadNodes lists the nodes of [Placement.ReadRing], in its order.
func (p *Placement) ReadNodes() []Node {
	names := p.layout.Current
	if p.layout.Phase == PhaseMoved {
		names = p.layout.Next
	}
	out := make([]Node, len(names))
	for i, n := range names {
		out[i] = Node{Name: n, URL: p.layout.URL(n)}
	}
	return out
}

// AppendReadOwners appends the nodes a find of mh asks, primary first.
func (p *Placement) AppendReadOwners(dst []int, mh multihash.Multihash) []int {
	if p.layout.Phase == PhaseMoved {
		return appendMapped(dst, p.next, p.nxtIdx, mh)
	}
	return appendMapped(dst, p.cur, p.curIdx, mh)
}

// AppendWriteOwners appends the nodes a write of mh goes to: its owners on
// Current and, during a change, on Next, each once.
func (p *Placement) AppendWriteOwners(dst []int, mh multihash.Multihash) []int {
	base := len(dst)
	dst = appendMapped(dst, p.cur, p.curIdx, mh)
	if p.next == nil {
		return dst
	}
	n := len(dst)
	dst = appendMapped(dst, p.next, p.nxtIdx, mh)
	// Keep the owners of Next not already among those of Current.
	out := dst[:n]
	for _, o := range dst[n:] {
		if !slices.Contains(dst[base:n], o) {
			out = append(out, o)
		}
	}
	return out
}

// WriteNodes lists the indexes of every node that receives writes:
// everyone on Current or Next. Provider records and context-wide
// operations go to all of them.
func (p *Placement) WriteNodes() []int {
	out := make([]int, len(p.layout.Nodes))
	for i := range out {
		out[i] = i
	}
	return out
}

// Gains reports whether node (an index) must copy mh in this change: it
// owns mh on Next and not on Current.
func (p *Placement) Gains(node int, mh multihash.Multihash) bool {
	if p.next == nil {
		return false
	}
	var buf [8]int
	if !slices.Contains(appendMapped(buf[:0], p.next, p.nxtIdx, mh), node) {
		return false
	}
	return !slices.Contains(appendMapped(buf[:0], p.cur, p.curIdx, mh), node)
}

// Source returns the node that should send mh to a node gaining it: the
// first owner of mh on Current that skip does not exclude, or -1 when
// skip excludes them all.
func (p *Placement) Source(mh multihash.Multihash, skip func(node int) bool) int {
	var buf [8]int
	for _, o := range appendMapped(buf[:0], p.cur, p.curIdx, mh) {
		if skip == nil || !skip(o) {
			return o
		}
	}
	return -1
}

// Boundaries returns the ring positions (see [scatter.Ring]) at which the
// owners of a key may change on Current or Next, ascending and distinct:
// for consecutive boundaries p < q, every key whose position is in
// (p, q] has the owners, on both rings, of a key at q, and so the same
// answers from Gains, Source and Owns; the positions after the last
// boundary or at or before the first have those of the first.
func (p *Placement) Boundaries() []uint64 {
	out := p.cur.Points()
	if p.next != nil {
		out = append(out, p.next.Points()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Owns reports whether node (an index) owns mh on the ring in force once
// the change completes: Next during a change, Current when stable. A node
// drops the keys it holds and does not own after a change.
func (p *Placement) Owns(node int, mh multihash.Multihash) bool {
	var buf [8]int
	if p.next != nil {
		return slices.Contains(appendMapped(buf[:0], p.next, p.nxtIdx, mh), node)
	}
	return slices.Contains(appendMapped(buf[:0], p.cur, p.curIdx, mh), node)
}

func appendMapped(dst []int, r *scatter.Ring, idx []int, mh multihash.Multihash) []int {
	base := len(dst)
	dst = r.AppendOwners(dst, mh)
	for i := base; i < len(dst); i++ {
		dst[i] = idx[dst[i]]
	}
	return dst
}
