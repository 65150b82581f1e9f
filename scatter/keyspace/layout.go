package keyspace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Phase is where a [Layout] stands in a membership change.
type Phase string

const (
	// PhaseStable: one ring, Current; reads and writes go to its owners.
	PhaseStable Phase = "stable"
	// PhaseCopy: writes go to the owners on Current and on Next; reads
	// stay on Current, while the nodes that gain ranges on Next copy them
	// from their owners on Current.
	PhaseCopy Phase = "copy"
	// PhaseMoved: the copies are complete; reads go to Next, writes still
	// to both, so that a reader one epoch behind still reads complete
	// ranges.
	PhaseMoved Phase = "moved"
)

// Node is a query node: a stable name (the ring places keys by it) and the
// base URL of its write and find APIs.
type Node struct {
	Name string
	URL  string
}

// Layout is one epoch of the query layer's membership: the ring or rings
// keys are placed on, and the phase of the change between them. Every
// process of the two layers (ingest nodes, query nodes, front ends) acts
// on the layout it last loaded; a [Coordinator] publishes the next epoch
// only when each of them reports the current one, so no two processes are
// ever more than one epoch apart, and the phases are built so that any
// two adjacent epochs agree: a reader of either reads only nodes that
// every writer of either writes to.
//
// Layouts are plain values that marshal to JSON; [Load] and [Save] keep
// one in a file (the one source of the epoch: see the package
// documentation).
type Layout struct {
	// Epoch numbers the layout; each change publishes Epoch+1.
	Epoch uint64
	// Replication is the number of owners of each key on a ring (R).
	Replication int
	// Vnodes is the number of points per node on a ring
	// (0: [scatter.DefaultVnodes]).
	Vnodes int `json:",omitempty"`
	// Nodes are the query nodes named by Current or Next, with their URLs.
	Nodes []Node
	// Current names the nodes of the ring in force.
	Current []string
	// Next names the nodes of the ring being moved to (PhaseCopy and
	// PhaseMoved only).
	Next []string `json:",omitempty"`
	// Phase is the step of the change from Current to Next.
	Phase Phase
	// Writers name the ingest nodes that write to the query layer. A
	// query node that starts answers finds only once each of them has
	// told it that nothing older is waiting for it in its outbox.
	Writers []string `json:",omitempty"`
}

// Validate reports whether l is well-formed: nodes named once, with URLs;
// rings of at least Replication known nodes; Next set exactly in the
// phases of a change, and different from Current.
func (l *Layout) Validate() error {
	if l.Replication < 1 {
		return fmt.Errorf("%w: replication %d must be positive", ErrInvalidLayout, l.Replication)
	}
	if l.Vnodes < 0 {
		return fmt.Errorf("%w: vnodes %d must not be negative", ErrInvalidLayout, l.Vnodes)
	}
	known := make(map[string]bool, len(l.Nodes))
	for _, n := range l.Nodes {
		switch {
		case n.Name == "":
			return fmt.Errorf("%w: a node without a name", ErrInvalidLayout)
		case n.URL == "":
			return fmt.Errorf("%w: node %q has no URL", ErrInvalidLayout, n.Name)
		case known[n.Name]:
			return fmt.Errorf("%w: node %q listed twice", ErrInvalidLayout, n.Name)
		}
		known[n.Name] = true
	}
	ring := func(what string, names []string) error {
		if len(names) < l.Replication {
			return fmt.Errorf("%w: %s ring has %d nodes, fewer than replication %d", ErrInvalidLayout, what, len(names), l.Replication)
		}
		seen := make(map[string]bool, len(names))
		for _, n := range names {
			if !known[n] {
				return fmt.Errorf("%w: %s ring names %q, which is not among the nodes", ErrInvalidLayout, what, n)
			}
			if seen[n] {
				return fmt.Errorf("%w: %s ring names %q twice", ErrInvalidLayout, what, n)
			}
			seen[n] = true
		}
		return nil
	}
	if err := ring("current", l.Current); err != nil {
		return err
	}
	switch l.Phase {
	case PhaseStable:
		if len(l.Next) > 0 {
			return fmt.Errorf("%w: a stable layout has no next ring", ErrInvalidLayout)
		}
	case PhaseCopy, PhaseMoved:
		if err := ring("next", l.Next); err != nil {
			return err
		}
		if sameSet(l.Current, l.Next) {
			return fmt.Errorf("%w: next ring equals the current one", ErrInvalidLayout)
		}
	default:
		return fmt.Errorf("%w: unknown phase %q", ErrInvalidLayout, l.Phase)
	}
	for _, n := range l.Nodes {
		if !slices.Contains(l.Current, n.Name) && !slices.Contains(l.Next, n.Name) {
			return fmt.Errorf("%w: node %q is on neither ring", ErrInvalidLayout, n.Name)
		}
	}
	seen := make(map[string]bool, len(l.Writers))
	for _, w := range l.Writers {
		if w == "" || seen[w] {
			return fmt.Errorf("%w: writer %q empty or listed twice", ErrInvalidLayout, w)
		}
		seen[w] = true
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of l.
func (l Layout) Clone() Layout {
	l.Nodes = slices.Clone(l.Nodes)
	l.Current = slices.Clone(l.Current)
	l.Next = slices.Clone(l.Next)
	l.Writers = slices.Clone(l.Writers)
	return l
}

// URL returns the URL of the node named name, or "".
func (l *Layout) URL(name string) string {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n.URL
		}
	}
	return ""
}

// Join returns the next epoch of a stable l that starts adding n:
// PhaseCopy towards Current plus n.
func (l Layout) Join(n Node) (Layout, error) {
	if l.Phase != PhaseStable {
		return Layout{}, fmt.Errorf("%w: join %q while the layout is in phase %s", ErrInvalidLayout, n.Name, l.Phase)
	}
	if l.URL(n.Name) != "" {
		return Layout{}, fmt.Errorf("%w: node %q is already a member", ErrInvalidLayout, n.Name)
	}
	next := l.Clone()
	next.Epoch++
	next.Nodes = append(next.Nodes, n)
	next.Next = append(slices.Clone(l.Current), n.Name)
	next.Phase = PhaseCopy
	return next, next.Validate()
}

// Leave returns the next epoch of a stable l that starts draining the
// node named name: PhaseCopy towards Current without it.
func (l Layout) Leave(name string) (Layout, error) {
	if l.Phase != PhaseStable {
		return Layout{}, fmt.Errorf("%w: leave %q while the layout is in phase %s", ErrInvalidLayout, name, l.Phase)
	}
	if !slices.Contains(l.Current, name) {
		return Layout{}, fmt.Errorf("%w: node %q is not a member", ErrInvalidLayout, name)
	}
	next := l.Clone()
	next.Epoch++
	next.Next = slices.DeleteFunc(slices.Clone(l.Current), func(s string) bool { return s == name })
	next.Phase = PhaseCopy
	return next, next.Validate()
}

// Advance returns the epoch after l in its change: PhaseCopy to
// PhaseMoved, and PhaseMoved to a stable layout over Next (dropping the
// nodes that left). A stable layout does not advance.
func (l Layout) Advance() (Layout, error) {
	next := l.Clone()
	next.Epoch++
	switch l.Phase {
	case PhaseCopy:
		next.Phase = PhaseMoved
	case PhaseMoved:
		next.Current, next.Next, next.Phase = next.Next, nil, PhaseStable
		next.Nodes = slices.DeleteFunc(next.Nodes, func(n Node) bool { return !slices.Contains(next.Current, n.Name) })
	default:
		return Layout{}, fmt.Errorf("%w: a %s layout does not advance", ErrInvalidLayout, l.Phase)
	}
	return next, next.Validate()
}

// Load reads a layout from the JSON file at path and validates it.
func Load(path string) (Layout, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Layout{}, fmt.Errorf("shard: read layout: %w", err)
	}
	return parse(path, b)
}

// parse decodes and validates the layout file at path, whose content is b.
func parse(path string, b []byte) (Layout, error) {
	var l Layout
	if err := json.Unmarshal(b, &l); err != nil {
		return Layout{}, fmt.Errorf("%w: %s: %w", ErrInvalidLayout, path, err)
	}
	if err := l.Validate(); err != nil {
		return Layout{}, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// Save writes l to path atomically (a temporary file renamed over it,
// both synced), so that a reader never sees half a layout.
func Save(path string, l Layout) error {
	if err := l.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("shard: encode layout: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".layout-*")
	if err != nil {
		return fmt.Errorf("shard: save layout: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("shard: save layout: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("shard: save layout: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("shard: save layout: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("shard: save layout: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
