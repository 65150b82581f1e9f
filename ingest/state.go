package ingest

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"
)

// The walker keeps its state in the datastore under /walk/<publisher>/:
//
//	lastHead        CID of the head of the last walk that finished
//	head            CID of the head of the walk in progress
//	tail            CID of the next advertisement to collect
//	count           advertisements collected by the walk in progress
//	spilled         bytes of their blocks held under q/ (uvarint)
//	applied         of those, how many are applied (as of a checkpoint)
//	q/<%016x i>     pending advertisement i, 0 being the newest:
//	                flags byte, uvarint CID length, CID, with
//	                flagVerified uvarint signer length and signer, then
//	                with flagCompact the advertisement in the compact
//	                form of pending.go, else (earlier versions) its block
//	seen/<cid>      written by earlier versions for an advertisement
//	                collected by the walk in progress; discarded with it
//	done/<cid>      advertisement applied while not frozen (kept for
//	                good, next to the entries it indexed); none is
//	                written for an advertisement applied while frozen
//	heads           the heads of the last walks that finished, newest
//	                first, at most maxRecentHeads: uvarint CID length
//	                and CID, each
//	frozen/<cid>    written by earlier versions for an advertisement
//	                applied while frozen; Reset drops it with its done/<cid>
//	rm/<prov>.<ctx> a context removed by an advertisement of this walk
//	addrs           the publisher's addresses (written by the Ingester)
//
// and /walking/<publisher> while a walk is in progress.
const (
	keyLastHead = "lastHead"
	keyHead     = "head"
	keyTail     = "tail"
	keyCount    = "count"
	keySpilled  = "spilled"
	keyBackoff  = "backoff"
	keyApplied  = "applied"
	keyAddrs    = "addrs"
	keyHeads    = "heads"
	dirQueue    = "q"
	dirSeen     = "seen"
	dirDone     = "done"
	dirFrozen   = "frozen"
	dirRemoved  = "rm"

	flagRemoved  = 1 << 0 // a newer ad of the walk removes this ad's context
	flagVerified = 1 << 1 // its signature was verified when it was collected; the signer follows the CID
	flagCompact  = 1 << 2 // the decoded advertisement follows, in the compact form of pending.go, not its block
)

// maxRecentHeads bounds the heads of finished walks a walker remembers
// (keyHeads): a walk stops at any of them, and a walk asked for one of
// them does nothing, without a marker for each advertisement.
const maxRecentHeads = 16

// walkRoot is the datastore prefix of every walker, and walkingRoot that of
// the list of walks in progress: /walking/<publisher> exists while the
// publisher's walk is unfinished, so that a restart finds them without a
// scan of every walker's keys.
const (
	walkRoot    = "/walk"
	walkingRoot = "/walking"
)

type keys struct{ prefix string }

func keysFor(publisher peer.ID) keys { return keys{walkRoot + "/" + publisher.String() + "/"} }

func walkingKey(publisher peer.ID) datastore.Key {
	return datastore.RawKey(walkingRoot + "/" + publisher.String())
}

func (k keys) key(name string) datastore.Key { return datastore.RawKey(k.prefix + name) }
func (k keys) dir(d string) string           { return k.prefix + d + "/" }
func (k keys) queue(i int) datastore.Key {
	return datastore.RawKey(fmt.Sprintf("%s%s/%016x", k.prefix, dirQueue, i))
}
func (k keys) seen(c cid.Cid) datastore.Key { return datastore.RawKey(k.dir(dirSeen) + c.String()) }
func (k keys) done(c cid.Cid) datastore.Key { return datastore.RawKey(k.dir(dirDone) + c.String()) }
func (k keys) removed(provider peer.ID, contextID []byte) datastore.Key {
	return datastore.RawKey(k.dir(dirRemoved) + hex.EncodeToString([]byte(provider)) + "." + hex.EncodeToString(contextID))
}

// WalkState is a walker's persisted position. Between walks only LastHead
// is set.
type WalkState struct {
	// LastHead is the head of the last walk that finished: it and every
	// advertisement before it are applied.
	LastHead cid.Cid
	// Head is the head the walk in progress started from.
	Head cid.Cid
	// Tail is the next advertisement the walk in progress collects;
	// cid.Undef once it has collected every advertisement down to
	// LastHead (or the start of the chain) and is applying them.
	Tail cid.Cid
	// Collected counts the advertisements the walk in progress collected,
	// and Applied those of them applied, as of the last checkpoint.
	Collected int
	Applied   int
	// Spilled is the size of the blocks of the advertisements collected
	// and held in the datastore until they are applied.
	Spilled int64
}

// Walking reports whether a walk is in progress.
func (s WalkState) Walking() bool { return s.Head.Defined() }

// Pending is the number of advertisements collected and not yet applied.
func (s WalkState) Pending() int { return s.Collected - s.Applied }

func getCid(ctx context.Context, ds datastore.Read, k datastore.Key) (cid.Cid, error) {
	b, err := ds.Get(ctx, k)
	if errors.Is(err, datastore.ErrNotFound) {
		return cid.Undef, nil
	}
	if err != nil {
		return cid.Undef, err
	}
	_, c, err := cid.CidFromBytes(b)
	if err != nil {
		return cid.Undef, fmt.Errorf("corrupt walker state %s: %w", k, err)
	}
	return c, nil
}

func getInt(ctx context.Context, ds datastore.Read, k datastore.Key) (int, error) {
	b, err := ds.Get(ctx, k)
	if errors.Is(err, datastore.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, fmt.Errorf("corrupt walker state %s", k)
	}
	return int(v), nil
}

// encodeHeads and decodeHeads convert the value of keyHeads.
func encodeHeads(heads []cid.Cid) []byte {
	var b []byte
	for _, c := range heads {
		cb := c.Bytes()
		b = binary.AppendUvarint(b, uint64(len(cb)))
		b = append(b, cb...)
	}
	return b
}

func decodeHeads(b []byte) ([]cid.Cid, error) {
	var heads []cid.Cid
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errors.New("corrupt walker state: bad head length")
		}
		_, c, err := cid.CidFromBytes(b[k : k+int(n)])
		if err != nil {
			return nil, fmt.Errorf("corrupt walker state: head: %w", err)
		}
		heads, b = append(heads, c), b[k+int(n):]
	}
	return heads, nil
}

func intBytes(v int) []byte { return binary.AppendUvarint(nil, uint64(v)) }

func loadState(ctx context.Context, ds datastore.Read, k keys) (WalkState, error) {
	var s WalkState
	var err error
	if s.LastHead, err = getCid(ctx, ds, k.key(keyLastHead)); err != nil {
		return s, err
	}
	if s.Head, err = getCid(ctx, ds, k.key(keyHead)); err != nil {
		return s, err
	}
	if s.Tail, err = getCid(ctx, ds, k.key(keyTail)); err != nil {
		return s, err
	}
	if s.Collected, err = getInt(ctx, ds, k.key(keyCount)); err != nil {
		return s, err
	}
	if s.Applied, err = getInt(ctx, ds, k.key(keyApplied)); err != nil {
		return s, err
	}
	spilled, err := getInt(ctx, ds, k.key(keySpilled))
	if err != nil {
		return s, err
	}
	s.Spilled = int64(spilled)
	if s.Applied > s.Collected {
		return s, fmt.Errorf("corrupt walker state: %d applied of %d collected", s.Applied, s.Collected)
	}
	return s, nil
}

// deletePrefix adds a delete of every key under prefix to b.
func deletePrefix(ctx context.Context, ds datastore.Read, b datastore.Write, prefix string) error {
	res, err := ds.Query(ctx, query.Query{Prefix: prefix, KeysOnly: true})
	if err != nil {
		return err
	}
	defer res.Close()
	for r := range res.Next() {
		if r.Error != nil {
			return r.Error
		}
		if err := b.Delete(ctx, datastore.RawKey(r.Key)); err != nil {
			return err
		}
	}
	return nil
}
