package memory

import (
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// multiID in shard.ids marks a multihash whose IDs are in shard.multi. Record
// IDs count up from 0 and never reach it.
const multiID = ^uint64(0)

// Size charges, in bytes, for the estimate of Size.
const (
	// keyOverhead is charged per multihash besides its bytes: the string
	// header and inline ID of its map slot, the map's spare slots, and the
	// allocator's rounding of the key.
	keyOverhead = 64
	// multiOverhead is charged per multihash with several IDs: its slot in
	// the side table and the slice that holds the IDs.
	multiOverhead = 80
)

// shard is one part of the multihash index. Its fields are guarded by mu.
type shard struct {
	mu sync.RWMutex
	// ids maps a multihash to its one record ID, or to multiID.
	ids map[string]uint64
	// multi holds the IDs, sorted and at least two, of each multihash that
	// ids maps to multiID.
	multi map[string]*[]uint64
	// keyBytes is the sum of the lengths of the keys of ids; extraIDs the
	// number of IDs in multi beyond one per key.
	keyBytes int64
	extraIDs int64

	_ [64]byte // keep the hot fields of neighbouring shards apart
}

// deadEntry is one index entry whose record is gone.
type deadEntry struct {
	key string
	id  uint64
}

func (sh *shard) init() {
	sh.ids = make(map[string]uint64)
	sh.multi = make(map[string]*[]uint64)
}

// view returns b as a string without copying, for map lookups only: the
// result must not be stored, nor used as the key of a map assignment (a
// string key is rewritten on assignment even when it is already there).
func view(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// add adds id to the entry of k; adding an ID that is there is a no-op.
// The map keeps k when it writes the entry.
func (sh *shard) add(k string, id uint64) {
	cur, ok := sh.ids[k]
	switch {
	case !ok:
		sh.ids[k] = id
		sh.keyBytes += int64(len(k))
	case cur == id:
	case cur != multiID:
		list := []uint64{cur, id}
		if id < cur {
			list[0], list[1] = id, cur
		}
		sh.ids[k] = multiID
		sh.multi[k] = &list
		sh.extraIDs++
	default:
		p := sh.multi[k]
		if i, found := slices.BinarySearch(*p, id); !found {
			*p = slices.Insert(*p, i, id)
			sh.extraIDs++
		}
	}
}

// remove removes id from the entry of key and reports whether it was there.
// key may be a [view].
func (sh *shard) remove(key string, id uint64) bool {
	cur, ok := sh.ids[key]
	switch {
	case !ok:
		return false
	case cur == id:
		delete(sh.ids, key)
		sh.keyBytes -= int64(len(key))
		return true
	case cur != multiID:
		return false
	}
	p := sh.multi[key]
	i, found := slices.BinarySearch(*p, id)
	if !found {
		return false
	}
	sh.extraIDs--
	if len(*p) == 2 {
		other := (*p)[1-i]
		delete(sh.multi, key)
		sh.ids[strings.Clone(key)] = other
		return true
	}
	*p = slices.Delete(*p, i, i+1)
	return true
}

// appendIDs appends the IDs of key to dst. key may be a [view].
func (sh *shard) appendIDs(dst []uint64, key string) []uint64 {
	cur, ok := sh.ids[key]
	switch {
	case !ok:
		return dst
	case cur != multiID:
		return append(dst, cur)
	default:
		return append(dst, *sh.multi[key]...)
	}
}

// keys returns the multihashes of the shard.
func (sh *shard) keys() []string {
	keys := make([]string, 0, len(sh.ids))
	for k := range sh.ids {
		keys = append(keys, k)
	}
	return keys
}

// live counts the multihashes with at least one ID in live.
func (sh *shard) live(live map[uint64]*record) int64 {
	var n int64
	for k, id := range sh.ids {
		if id != multiID {
			if live[id] != nil {
				n++
			}
			continue
		}
		for _, id := range *sh.multi[k] {
			if live[id] != nil {
				n++
				break
			}
		}
	}
	return n
}

// dead returns the entries whose ID is not in live.
func (sh *shard) dead(live map[uint64]*record) []deadEntry {
	var dead []deadEntry
	for k, id := range sh.ids {
		if id != multiID {
			if live[id] == nil {
				dead = append(dead, deadEntry{k, id})
			}
			continue
		}
		for _, id := range *sh.multi[k] {
			if live[id] == nil {
				dead = append(dead, deadEntry{k, id})
			}
		}
	}
	return dead
}

// size estimates the bytes the shard holds.
func (sh *shard) size() int64 {
	return sh.keyBytes + int64(len(sh.ids))*keyOverhead + int64(len(sh.multi))*multiOverhead + sh.extraIDs*8
}
