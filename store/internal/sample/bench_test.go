package sample

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// BenchmarkCandidates is what a Put adds per multihash once a context's
// sample is full (the common case) and for a new context (tau at its
// maximum), next to a baseline that only touches each multihash.
func BenchmarkCandidates(b *testing.B) {
	mhs := make([][]byte, 10000)
	for i := range mhs {
		d := sha256.Sum256(fmt.Appendf(nil, "%d", i))
		mhs[i] = append([]byte{0x12, 0x20}, d[:]...)
	}
	h := NewHasher(1)
	full := New()
	full.Add(Candidates(h, full.Tau, mhs))
	for _, tc := range []struct {
		name string
		tau  uint64
	}{{"new-context", New().Tau}, {"full-sample", full.Tau}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				_ = Candidates(h, tc.tau, mhs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mhs)), "ns/mh")
		})
	}
	b.Run("baseline-touch", func(b *testing.B) {
		var x byte
		for b.Loop() {
			for _, mh := range mhs {
				x ^= mh[len(mh)-1]
			}
		}
		_ = x
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mhs)), "ns/mh")
	})
}
