package memory

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/multiformats/go-multihash"
)

// popEntryBytes is what Size charges per multihash of a population: the
// string header; the bytes are those of the index's key, which the
// population shares when it put them there.
const popEntryBytes = 16

// population is the set of multihashes of one record (store.Sampler). Its
// fields are guarded by mu.
type population struct {
	mu sync.Mutex
	// sorted holds distinct multihashes in ascending order; pending those
	// added since the last merge, in any order and with repeats.
	sorted  []string
	pending []string
	dead    bool // the record is gone: nothing may be added
}

// add adds keys, which it keeps, and returns the change in the number of
// strings held. A large pending list is merged, so that re-Puts of the
// same multihashes do not grow it without bound.
func (p *population) add(keys []string) int {
	if p == nil {
		return 0 // the record is gone
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return 0
	}
	n0 := len(p.sorted) + len(p.pending)
	p.pending = append(p.pending, keys...)
	if len(p.pending) > max(len(p.sorted), 4096) {
		p.merge()
	}
	return len(p.sorted) + len(p.pending) - n0
}

// merge sorts pending into sorted; the caller holds mu.
func (p *population) merge() {
	if len(p.pending) == 0 {
		return
	}
	slices.Sort(p.pending)
	p.pending = slices.Compact(p.pending)
	out := make([]string, 0, len(p.sorted)+len(p.pending))
	i, j := 0, 0
	for i < len(p.sorted) && j < len(p.pending) {
		switch c := strings.Compare(p.sorted[i], p.pending[j]); {
		case c < 0:
			out = append(out, p.sorted[i])
			i++
		case c > 0:
			out = append(out, p.pending[j])
			j++
		default:
			out = append(out, p.sorted[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, p.sorted[i:]...)
	out = append(out, p.pending[j:]...)
	p.sorted, p.pending = out, nil
}

// remove removes mhs and returns the change in the number of strings held.
func (p *population) remove(mhs []multihash.Multihash) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n0 := len(p.sorted) + len(p.pending)
	p.merge()
	rm := make([]string, len(mhs))
	for i, mh := range mhs {
		rm[i] = view(mh)
	}
	slices.Sort(rm)
	j := 0
	p.sorted = slices.DeleteFunc(p.sorted, func(k string) bool {
		for j < len(rm) && rm[j] < k {
			j++
		}
		return j < len(rm) && rm[j] == k
	})
	return len(p.sorted) - n0
}

// drop empties p for good and returns the change in the number of strings
// held.
func (p *population) drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.sorted) + len(p.pending)
	p.sorted, p.pending, p.dead = nil, nil, true
	return -n
}

// sample counts p, calls pick and returns copies of the multihashes at the
// positions it picked, or an error naming a position out of range.
func (p *population) sample(pick func(n int) []int) ([]multihash.Multihash, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.merge()
	n := len(p.sorted)
	positions := pick(n)
	out := make([]multihash.Multihash, len(positions))
	for i, pos := range positions {
		if pos < 0 || pos >= n {
			return nil, fmt.Errorf("position %d picked of a population of %d", pos, n)
		}
		out[i] = multihash.Multihash(p.sorted[pos])
	}
	return out, nil
}
