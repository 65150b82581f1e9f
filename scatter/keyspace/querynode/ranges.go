package querynode

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// exportRanges is where on the ring the keys an export sends lie: the
// segments of positions whose keys some destination gains and this node
// is the source of. An export over a [store.SeekScanner] reads only
// those: a source scans about what it exports, not its whole store.
//
// Owners change only at the rings' points ([keyspace.Placement.Boundaries]),
// so each segment between two boundaries is decided by one key placed at
// its upper end. Keys whose position is read from their digest sort, for
// one code and digest length, as their positions do, so a key outside
// every segment is skipped to the first key of the next segment with the
// same code and length. Keys placed otherwise (identity and other
// non-cryptographic multihashes, and the ambiguous digest-prefix forms)
// are all read; the export decides each key it reads as before.
type exportRanges struct {
	lo, hi []uint64 // wanted segments, inclusive, ascending, apart
}

// newExportRanges computes the segments for an export by self to dests,
// with the nodes skip reports not counted as sources.
func newExportRanges(place *keyspace.Placement, self int, dests []int, skip func(int) bool) *exportRanges {
	return segmentsWhere(place, func(mh multihash.Multihash) bool {
		if place.Source(mh, skip) != self {
			return false
		}
		return slices.ContainsFunc(dests, func(d int) bool { return place.Gains(d, mh) })
	})
}

// segmentsWhere returns the ring segments whose keys want holds for,
// asking want of one sha2-256 multihash placed at each segment's upper
// end: owners change only at place's boundaries.
func segmentsWhere(place *keyspace.Placement, want func(multihash.Multihash) bool) *exportRanges {
	b := place.Boundaries()
	var key [34]byte
	key[0], key[1] = multihash.SHA2_256, 32
	at := func(pos uint64) bool {
		binary.BigEndian.PutUint64(key[2:], pos)
		return want(multihash.Multihash(key[:]))
	}
	r := &exportRanges{}
	add := func(lo, hi uint64) {
		if n := len(r.hi); n > 0 && r.hi[n-1]+1 == lo {
			r.hi[n-1] = hi
			return
		}
		r.lo, r.hi = append(r.lo, lo), append(r.hi, hi)
	}
	if len(b) == 0 {
		return r
	}
	first := at(b[0])
	if first {
		add(0, b[0])
	}
	for i := 1; i < len(b); i++ {
		if at(b[i]) {
			add(b[i-1]+1, b[i])
		}
	}
	if first && b[len(b)-1] < ^uint64(0) {
		add(b[len(b)-1]+1, ^uint64(0))
	}
	return r
}

// contains reports whether the position pos lies in a wanted segment.
func (r *exportRanges) contains(pos uint64) bool {
	k := sort.Search(len(r.hi), func(i int) bool { return r.hi[i] >= pos })
	return k < len(r.lo) && r.lo[k] <= pos
}

// spans returns the store spans of the segments for the multihashes
// that begin with header (a code and a digest length whose keys are
// placed by their digest): header‖lo up to header‖(hi+1).
func (r *exportRanges) spans(header []byte) []store.Span {
	spans := make([]store.Span, 0, len(r.lo))
	for i, lo := range r.lo {
		sp := store.Span{Start: binary.BigEndian.AppendUint64(slices.Clone(header), lo)}
		if r.hi[i] == ^uint64(0) {
			sp.End = prefixEnd(header)
		} else {
			sp.End = binary.BigEndian.AppendUint64(slices.Clone(header), r.hi[i]+1)
		}
		spans = append(spans, sp)
	}
	return spans
}

// header returns the code and digest length that begin mh.
func header(mh []byte) []byte {
	_, n := binary.Uvarint(mh)
	_, m := binary.Uvarint(mh[n:])
	return mh[:n+m]
}

// positional returns mh's ring position when it is read from the digest
// and the export's segments decide mh (not an ambiguous form).
func positional(mh []byte) (uint64, bool) {
	if ambiguous(mh) {
		return 0, false
	}
	return scatter.RingPosition(mh)
}

// seek is the seek function of [store.SeekScanner.AllSeek]: nil to read
// mh, or where the next key worth reading with mh's code and digest
// length may begin.
func (r *exportRanges) seek(mh []byte) []byte {
	pos, ok := positional(mh)
	if !ok {
		return nil
	}
	k := sort.Search(len(r.hi), func(i int) bool { return r.hi[i] >= pos })
	if k < len(r.lo) && r.lo[k] <= pos {
		return nil
	}
	h := header(mh)
	if k == len(r.lo) {
		return prefixEnd(h)
	}
	return binary.BigEndian.AppendUint64(slices.Clone(h), r.lo[k])
}

// prefixEnd returns the least bytes above every byte string that starts
// with p, or nil when there are none.
func prefixEnd(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
