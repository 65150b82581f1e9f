package storetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/indexkit/indexkit/store"
)

// testAllSeek checks store.SeekScanner: AllSeek yields, in ascending byte
// order, exactly the entries of All that seek does not skip.
func testAllSeek(t *testing.T, s store.Store) {
	sk, ok := s.(store.SeekScanner)
	if !ok {
		t.Skipf("%T does not implement store.SeekScanner", s)
	}
	ctx := context.Background()
	mhs := Multihashes("seek", 5000)
	mustPut(t, s, value("p1", "ctx1", "md1"), mhs...)
	mustPut(t, s, value("p2", "ctx1", "md2"), mhs[:100]...)
	// Skip every multihash whose digest's first byte is odd: on to the
	// next even byte (the bytes after sha2-256's two-byte header).
	skip := func(mh []byte) []byte {
		if len(mh) < 3 || mh[2]%2 == 0 {
			return nil
		}
		if mh[2] == 0xff {
			return append(bytes.Clone(mh[:1]), mh[1]+1)
		}
		return append(bytes.Clone(mh[:2]), mh[2]+1)
	}
	want := map[string]int{}
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if skip(e.Multihash) == nil {
			want[string(e.Multihash)] = len(e.Values)
		}
	}
	var prev []byte
	n := 0
	for e, err := range sk.AllSeek(ctx, skip) {
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && bytes.Compare(prev, e.Multihash) >= 0 {
			t.Fatalf("AllSeek not in ascending byte order at entry %d", n)
		}
		prev = e.Multihash
		if w, ok := want[string(e.Multihash)]; !ok || w != len(e.Values) {
			t.Fatalf("AllSeek yields %x with %d values, All %d (skipped: %v)", []byte(e.Multihash), len(e.Values), w, !ok)
		}
		n++
	}
	if n != len(want) || n == 0 || n == 5000 {
		t.Fatalf("AllSeek yields %d entries, want %d of 5000", n, len(want))
	}
}
