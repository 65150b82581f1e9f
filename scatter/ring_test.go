package scatter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

func ringNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("http://indexer-%02d.example:3000", i)
	}
	return names
}

func ringKeys(n int) []multihash.Multihash {
	keys := make([]multihash.Multihash, n)
	var b [8]byte
	for i := range keys {
		binary.BigEndian.PutUint64(b[:], uint64(i))
		mh, err := multihash.Sum(b[:], multihash.SHA2_256, -1)
		if err != nil {
			panic(err)
		}
		keys[i] = mh
	}
	return keys
}

func TestRingBalance(t *testing.T) {
	const backends, keys = 16, 200_000
	r, err := NewRing(ringNames(backends), DefaultVnodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, backends)
	for _, mh := range ringKeys(keys) {
		counts[r.Owners(mh)[0]]++
	}
	even := float64(keys) / backends
	for i, c := range counts {
		// With 256 vnodes each share's spread is about ±6% (1σ); 20%
		// leaves room for the fixed names without hiding a broken hash.
		if dev := float64(c)/even - 1; dev < -0.2 || dev > 0.2 {
			t.Errorf("backend %d owns %d keys, %+.0f%% off even (%v)", i, c, 100*dev, counts)
		}
	}
}

// Adding a backend moves only the keys it takes over, about 1/(n+1) of
// them, and no key moves between two old backends.
func TestRingAddBackend(t *testing.T) {
	for _, repl := range []int{1, 3} {
		t.Run(fmt.Sprint("replication=", repl), func(t *testing.T) {
			names := ringNames(17)
			before, err := NewRing(names[:16], DefaultVnodes, repl)
			if err != nil {
				t.Fatal(err)
			}
			after, err := NewRing(names, DefaultVnodes, repl)
			if err != nil {
				t.Fatal(err)
			}
			keys := ringKeys(100_000)
			moved := 0
			for _, mh := range keys {
				old, cur := before.Owners(mh), after.Owners(mh)
				if !slices.Equal(old, cur) {
					moved++
				}
				for _, o := range cur {
					if o != 16 && !slices.Contains(old, o) {
						t.Fatalf("key %x: owners %v became %v: moved between old backends", mh, old, cur)
					}
				}
			}
			// Expected: a key changes owners when the new backend is one of
			// its repl owners, repl/17 of the keys.
			want := float64(repl) / 17
			if got := float64(moved) / float64(len(keys)); got > 1.25*want || got < 0.75*want {
				t.Errorf("%.1f%% of keys moved, want about %.1f%%", 100*got, 100*want)
			}
		})
	}
}

func TestRingReplication(t *testing.T) {
	for _, repl := range []int{1, 2, 3, 8} {
		r, err := NewRing(ringNames(8), 32, repl)
		if err != nil {
			t.Fatal(err)
		}
		for _, mh := range ringKeys(2_000) {
			o := r.Owners(mh)
			if len(o) != repl {
				t.Fatalf("replication %d: %d owners", repl, len(o))
			}
			s := slices.Clone(o)
			slices.Sort(s)
			if len(slices.Compact(s)) != repl {
				t.Fatalf("replication %d: owners %v not distinct", repl, o)
			}
			if o[0] != r.Owners(mh)[0] {
				t.Fatal("owners not deterministic")
			}
		}
	}
}

// Placement depends on the names, not on their order, and multihashes of
// any function are placed.
func TestRingDeterministic(t *testing.T) {
	names := ringNames(5)
	rev := slices.Clone(names)
	slices.Reverse(rev)
	a, _ := NewRing(names, 16, 2)
	b, _ := NewRing(rev, 16, 2)
	id, err := multihash.Sum([]byte("identity"), multihash.IDENTITY, -1)
	if err != nil {
		t.Fatal(err)
	}
	keys := append(ringKeys(500), id, multihash.Multihash("not a multihash"))
	for _, mh := range keys {
		oa, ob := a.Owners(mh), b.Owners(mh)
		for i := range oa {
			if names[oa[i]] != rev[ob[i]] {
				t.Fatalf("key %x: owners %v in one order, %v in the other", mh, oa, ob)
			}
		}
	}
	// A sha2-256 multihash sits at its digest's first 8 bytes.
	mh := keys[0]
	if got, want := ringPosition(mh), binary.BigEndian.Uint64(mh[2:10]); got != want {
		t.Errorf("position %x, want the digest prefix %x", got, want)
	}
}

func TestNewRingInvalid(t *testing.T) {
	for _, tc := range []struct {
		names        []string
		vnodes, repl int
	}{
		{nil, 1, 1},
		{[]string{"a"}, 0, 1},
		{[]string{"a"}, 1, 2},
		{[]string{"a", "b"}, 1, 0},
		{[]string{"a", "a"}, 1, 1},
		{[]string{""}, 1, 1},
	} {
		if _, err := NewRing(tc.names, tc.vnodes, tc.repl); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("NewRing(%q, %d, %d): %v", tc.names, tc.vnodes, tc.repl, err)
		}
	}
}

func BenchmarkRingOwners(b *testing.B) {
	r, _ := NewRing(ringNames(16), DefaultVnodes, 3)
	keys := ringKeys(1024)
	dst := make([]int, 0, 3)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst = r.AppendOwners(dst[:0], keys[i%len(keys)])
	}
}

// TestRingPlacesIndexKeys: a key a store shortens to a digest prefix
// (store.IndexKey) has the owners of the whole multihash, so that a
// query node exporting its keys sends them where a lookup goes.
func TestRingPlacesIndexKeys(t *testing.T) {
	r, err := NewRing([]string{"a", "b", "c", "d", "e"}, 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	codes := []uint64{0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x20,
		0x1012, 0x1013, 0x1014, 0x1015, 0xb220, 0xb240, 0xb260}
	for _, code := range codes {
		for i := range 50 {
			mh, err := multihash.Sum([]byte{byte(i), byte(code)}, code, -1)
			if err != nil {
				continue // a length the function does not take
			}
			short := store.IndexKey(mh)
			if got, want := r.Owners(short), r.Owners(mh); !slices.Equal(got, want) {
				t.Fatalf("code %#x: owners of the store's key %x = %v, of the multihash %v", code, []byte(short), got, want)
			}
		}
	}
}
