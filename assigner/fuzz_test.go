package assigner

import "testing"

// byteChooser takes the model's choices from fuzz bytes; exhausted, it
// chooses 0.
type byteChooser struct{ b []byte }

func (c *byteChooser) IntN(n int) int {
	if len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

// FuzzState drives the model test's world and invariants from fuzz
// bytes: the first bytes shape the pool and the initial holdings, the
// rest choose the events; then the pool settles and liveness is checked.
func FuzzState(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 5, 1, 0, 2, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 30, 30, 30, 50, 50, 50, 80, 80, 80, 50, 50})
	f.Add([]byte("freeze them all, then hand the publishers off, restart in the middle of it"))
	f.Add([]byte{255, 254, 253, 252, 251, 250, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 40, 60, 80, 81, 82, 83})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{b: data}
		m := newModel(t, c)
		for i := 0; len(c.b) > 0 && i < 2000; i++ {
			m.step()
			if i%50 == 49 {
				m.settle()
			}
		}
		m.settle()
	})
}
