package keyspace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Goal is the membership change a [Coordinator] drives: add one node or
// remove one. The zero Goal only finishes a change in progress.
type Goal struct {
	Join  *Node  // add this node
	Leave string // remove the node of this name
}

func (g Goal) String() string {
	switch {
	case g.Join != nil:
		return "join " + g.Join.Name
	case g.Leave != "":
		return "leave " + g.Leave
	}
	return "finish"
}

// Observation is what a coordinator knows at one moment: the layout in
// force and the status each process reported. A process missing from
// its map did not answer.
type Observation struct {
	Layout Layout
	// Revision is the layout's revision in its [LayoutStore]: a publish
	// the observation leads to replaces that one only.
	Revision Revision
	// Query are the query nodes' statuses by name, Ingest the writers'
	// by name, Front the front ends' by any key.
	Query  map[string]Status
	Ingest map[string]Status
	Front  map[string]Status
	// Fronts is the number of front ends the coordinator asks: each must
	// have answered.
	Fronts int
}

// ActionKind is what a coordinator does next.
type ActionKind int

const (
	// ActWait: nothing can be done until the processes report more; Why
	// says what is awaited.
	ActWait ActionKind = iota
	// ActPublish: write Layout as the next epoch and have every process
	// load it.
	ActPublish
	// ActCopy: ask Nodes to copy the keys they gain in this epoch.
	ActCopy
	// ActDrop: ask Nodes to drop the keys they no longer own.
	ActDrop
	// ActDone: the goal is reached and the old owners have dropped
	// their moved ranges.
	ActDone
)

func (k ActionKind) String() string {
	return [...]string{"wait", "publish", "copy", "drop", "done"}[k]
}

// Action is a coordinator's next step.
type Action struct {
	Kind   ActionKind
	Layout Layout   // ActPublish
	Nodes  []string // ActCopy, ActDrop
	Why    string
}

// NextAction decides a coordinator's next step towards goal from what it
// observes. It is a pure function: the safety of a membership change rests
// on it, and the model test drives it against simulated processes.
//
// The rules, for a layout of epoch e:
//
//   - No epoch is published until every writer, every front end and every
//     query node of the layout reports epoch e, so no two processes are
//     ever more than one epoch apart. A query node that is leaving may be
//     unreachable (a dead node can be removed); its keys are copied from
//     the other owners.
//   - Copy (e): the gaining nodes copy only once every writer has
//     delivered, to every reachable query node, the batches it routed
//     under epochs before e (which did not go to the gaining nodes); then
//     every later write reaches them directly. When each reports its copy
//     of epoch e done, Moved is published.
//   - Moved (e): reads move to Next once everyone reports e; then Stable.
//   - Stable (e) after a change: once everyone reports e and the writers
//     have delivered what they routed under Moved (which still went to
//     the old owners), the nodes of the ring drop what they do not own.
//     Then the goal is done.
func NextAction(obs Observation, goal Goal) Action {
	l := obs.Layout
	if why := notAt(obs); why != "" {
		return Action{Kind: ActWait, Why: why}
	}
	switch l.Phase {
	case PhaseStable:
		if !goalMet(l, goal) {
			var next Layout
			var err error
			if goal.Join != nil {
				next, err = l.Join(*goal.Join)
			} else {
				next, err = l.Leave(goal.Leave)
			}
			if err != nil {
				return Action{Kind: ActWait, Why: err.Error()}
			}
			return Action{Kind: ActPublish, Layout: next, Why: goal.String()}
		}
		if why := undelivered(obs, l.Epoch); why != "" {
			return Action{Kind: ActWait, Why: why}
		}
		var todo []string
		running := ""
		for _, n := range l.Current {
			switch t := obs.Query[n].Drop; {
			case t == nil || t.Epoch != l.Epoch || t.Error != "":
				todo = append(todo, n)
			case !t.Done:
				running = fmt.Sprintf("%s drops (%d keys so far)", n, t.Keys)
			}
		}
		if len(todo) > 0 {
			return Action{Kind: ActDrop, Nodes: todo, Why: "old owners drop the moved ranges"}
		}
		if running != "" {
			return Action{Kind: ActWait, Why: running}
		}
		return Action{Kind: ActDone, Why: goal.String() + " done"}
	case PhaseCopy:
		if why := undelivered(obs, l.Epoch); why != "" {
			return Action{Kind: ActWait, Why: why}
		}
		var todo []string
		for _, n := range gaining(l) {
			if t := obs.Query[n].Copy; t == nil || t.Epoch != l.Epoch || t.Error != "" {
				todo = append(todo, n)
			} else if !t.Done {
				return Action{Kind: ActWait, Why: fmt.Sprintf("%s copies (%d keys so far)", n, t.Keys)}
			}
		}
		if len(todo) > 0 {
			return Action{Kind: ActCopy, Nodes: todo, Why: "gaining nodes copy their new ranges"}
		}
		next, err := l.Advance()
		if err != nil {
			return Action{Kind: ActWait, Why: err.Error()}
		}
		return Action{Kind: ActPublish, Layout: next, Why: "copies complete: reads move"}
	case PhaseMoved:
		next, err := l.Advance()
		if err != nil {
			return Action{Kind: ActWait, Why: err.Error()}
		}
		return Action{Kind: ActPublish, Layout: next, Why: "everyone reads the new ring"}
	}
	return Action{Kind: ActWait, Why: fmt.Sprintf("unknown phase %q", l.Phase)}
}

func goalMet(l Layout, g Goal) bool {
	switch {
	case g.Join != nil:
		return slices.Contains(l.Current, g.Join.Name)
	case g.Leave != "":
		return !slices.Contains(l.Current, g.Leave)
	}
	return true
}

// gaining lists the nodes of Next that may gain keys: every node of Next
// when a node leaves (its ranges spread over the rest), the new nodes
// when nodes join.
func gaining(l Layout) []string {
	var out []string
	for _, n := range l.Next {
		if !slices.Contains(l.Current, n) || len(l.Next) <= len(l.Current) {
			out = append(out, n)
		}
	}
	return out
}

// leaving reports whether name is on Current and not on Next.
func leaving(l Layout, name string) bool {
	return l.Phase != PhaseStable && !slices.Contains(l.Next, name)
}

// notAt says who does not yet act on the layout's epoch, or "".
func notAt(obs Observation) string {
	l := obs.Layout
	var lag []string
	check := func(role, name string, st Status, ok bool) {
		switch {
		case !ok:
			lag = append(lag, role+" "+name+" (no answer)")
		case st.Epoch != l.Epoch:
			lag = append(lag, fmt.Sprintf("%s %s (epoch %d)", role, name, st.Epoch))
		}
	}
	for _, w := range l.Writers {
		st, ok := obs.Ingest[w]
		check("writer", w, st, ok)
	}
	for _, n := range l.Nodes {
		st, ok := obs.Query[n.Name]
		if !ok && leaving(l, n.Name) {
			continue
		}
		check("query node", n.Name, st, ok)
	}
	if len(obs.Front) < obs.Fronts {
		lag = append(lag, fmt.Sprintf("%d of %d front ends answered", len(obs.Front), obs.Fronts))
	}
	for k, st := range obs.Front {
		check("front end", k, st, true)
	}
	if len(lag) == 0 {
		return ""
	}
	sort.Strings(lag)
	return fmt.Sprintf("waiting for epoch %d: %s", l.Epoch, strings.Join(lag, ", "))
}

// undelivered says which writer still holds a batch routed under an
// epoch before e for a reachable query node, or "".
func undelivered(obs Observation, e uint64) string {
	var lag []string
	for w, st := range obs.Ingest {
		for n, o := range st.Owners {
			if _, up := obs.Query[n]; !up {
				continue // delivered when it is back; not a copy source meanwhile
			}
			if o.Pending > 0 && o.OldestEpoch < e {
				lag = append(lag, fmt.Sprintf("%s→%s (%d batches from epoch %d)", w, n, o.Pending, o.OldestEpoch))
			}
		}
	}
	if len(lag) == 0 {
		return ""
	}
	sort.Strings(lag)
	return fmt.Sprintf("waiting for batches routed before epoch %d: %s", e, strings.Join(lag, ", "))
}
