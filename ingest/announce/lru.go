package announce

import (
	"container/list"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// seenKey names one announce: the same CID from two publishers is two
// announces, so that one publisher cannot mute another by announcing its
// CIDs first.
type seenKey struct {
	publisher peer.ID
	cid       string // cid.KeyString
}

func keyOf(publisher peer.ID, c cid.Cid) seenKey { return seenKey{publisher, c.KeyString()} }

// seenLRU is a fixed-size set of recent announces. Not goroutine-safe.
type seenLRU struct {
	max   int
	order *list.List // of seenKey, most recent at the front
	elems map[seenKey]*list.Element
}

func newSeenLRU(max int) *seenLRU {
	return &seenLRU{max: max, order: list.New(), elems: make(map[seenKey]*list.Element, max)}
}

// add records k and reports whether it was already there.
func (l *seenLRU) add(k seenKey) bool {
	if l.max <= 0 {
		return false
	}
	if e, ok := l.elems[k]; ok {
		l.order.MoveToFront(e)
		return true
	}
	if l.order.Len() >= l.max {
		old := l.order.Back()
		l.order.Remove(old)
		delete(l.elems, old.Value.(seenKey))
	}
	l.elems[k] = l.order.PushFront(k)
	return false
}

func (l *seenLRU) remove(k seenKey) {
	if e, ok := l.elems[k]; ok {
		l.order.Remove(e)
		delete(l.elems, k)
	}
}
