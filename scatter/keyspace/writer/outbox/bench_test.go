package outbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
)

const (
	benchPayload = 64 << 10
	benchSyncK   = 16
)

// BenchmarkAppend appends 64 KiB payloads to one queue with a Sync every
// 16 appends; raw is the baseline in the same run: the same bytes (a
// 28-byte header and the payload, in one write) to one os.File with an
// fsync at the same cadence. The ratio of the two MB/s is the figure.
func BenchmarkAppend(b *testing.B) {
	p := make([]byte, benchPayload)
	for i := range p {
		p[i] = byte(i)
	}
	b.Run("outbox", func(b *testing.B) {
		o, err := outbox.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer o.Close()
		b.SetBytes(benchPayload)
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if _, err := o.Append("q", 1, p); err != nil {
				b.Fatal(err)
			}
			if i%benchSyncK == benchSyncK-1 {
				if err := o.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		rec := append(make([]byte, 28), p...)
		b.SetBytes(benchPayload)
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if _, err := f.Write(rec); err != nil {
				b.Fatal(err)
			}
			if i%benchSyncK == benchSyncK-1 {
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
