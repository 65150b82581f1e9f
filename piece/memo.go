package piece

import "sync"

// memo maps byte strings to values of a pure function of them (a
// signature of a message, the peer ID a string decodes to), so that a
// value is computed once for inputs seen again. It keeps two generations
// of at most size entries: when the current one is full it becomes the
// previous one and the oldest is dropped, so memory stays bounded and
// recent inputs stay found. Only a byte-identical input finds a value.
type memo[V any] struct {
	size      int
	mu        sync.Mutex
	cur, prev map[string]V
}

func newMemo[V any](size int) *memo[V] {
	return &memo[V]{size: size, cur: make(map[string]V)}
}

// get returns the value remembered for k. It does not keep k.
func (m *memo[V]) get(k []byte) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.cur[string(k)]; ok {
		return v, true
	}
	v, ok := m.prev[string(k)]
	return v, ok
}

// put remembers v for a copy of k.
func (m *memo[V]) put(k []byte, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.cur) >= m.size {
		m.prev, m.cur = m.cur, make(map[string]V, m.size)
	}
	m.cur[string(k)] = v
}

// len returns how many entries m holds.
func (m *memo[V]) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.prev)
}
