package redis

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/lease"
)

var _ lease.Watcher = (*Store)(nil)

// The feed reader's settings: how long one XREAD blocks (also how long a
// cancelled Watch may take to return, since go-redis does not interrupt a
// blocking read), how many entries it takes at once, and the backoff
// between attempts after a lost connection.
const (
	watchBlock      = time.Second
	watchCount      = 512
	watchBackoffMin = 50 * time.Millisecond
	watchBackoffMax = 2 * time.Second
)

// Watch implements [lease.Watcher] with the stream P"changes", which every
// writing script appends to (see "Change feed" in the package
// documentation). It yields a Reset, then reads the stream from the entry
// that was last when it started, with XREAD BLOCK. It yields a Reset again
// after a lost connection (once the server answers), and when the entries'
// sequence numbers show a gap: the stream was trimmed past the reader
// (MAXLEN ~ [FeedMaxLen]) or lost with the server's data. A closed store,
// or a server error that retrying cannot mend (a wrong key type, a refused
// command), is yielded once and ends it.
func (s *Store) Watch(ctx context.Context) iter.Seq2[lease.Change, error] {
	return func(yield func(lease.Change, error) bool) {
		var (
			last  string // the last entry read
			seq   int64  // its sequence number
			reset = true // a Reset is owed, from the tail
			wait  = watchBackoffMin
		)
		// fail handles err: it reports whether to go on (after a backoff
		// and with a Reset owed), else yields it when it is final.
		fail := func(op string, err error) bool {
			if ctx.Err() != nil {
				return false
			}
			if !transient(err) {
				yield(lease.Change{}, fmt.Errorf("lease/redis: watch: %s: %w", op, err))
				return false
			}
			reset = true
			t := time.NewTimer(wait)
			defer t.Stop()
			wait = min(2*wait, watchBackoffMax)
			select {
			case <-ctx.Done():
				return false
			case <-t.C:
				return true
			}
		}
		for {
			if err := s.begin(ctx, "watch"); err != nil {
				if ctx.Err() == nil {
					yield(lease.Change{}, err)
				}
				return
			}
			if reset {
				v, err := tailScript.Run(ctx, s.rdb, []string{s.feedKey(), s.seqKey()}).Slice()
				if err != nil {
					if fail("tail", err) {
						continue
					}
					return
				}
				last, _ = v[0].(string)
				seq, reset = toInt(v[1]), false
				if !yield(lease.Change{Reset: true}, nil) {
					return
				}
			}
			res, err := s.rdb.XRead(ctx, &goredis.XReadArgs{
				Streams: []string{s.feedKey(), last}, Count: watchCount, Block: watchBlock,
			}).Result()
			if errors.Is(err, goredis.Nil) {
				// Nothing new within the block. A stream that was lost and
				// made again may have IDs below the reader's (the same
				// millisecond, or a server clock set back), which XREAD
				// would never return: compare with the tail.
				v, err := tailScript.Run(ctx, s.rdb, []string{s.feedKey(), s.seqKey()}).Slice()
				if err != nil {
					if fail("tail", err) {
						continue
					}
					return
				}
				tail, _ := v[0].(string)
				if toInt(v[1]) < seq || idLess(tail, last) {
					reset = true
				}
				continue
			}
			if err != nil {
				if fail("xread", err) {
					continue
				}
				return
			}
			wait = watchBackoffMin
			for _, st := range res {
				for _, msg := range st.Messages {
					row, q, err := parseChange(msg.Values)
					if err != nil {
						yield(lease.Change{}, fmt.Errorf("lease/redis: watch: entry %s: %w", msg.ID, err))
						return
					}
					if q != seq+1 {
						// Entries between the last one read and this one
						// are gone (trimmed, or the data was lost and the
						// counter started again).
						if !yield(lease.Change{Reset: true}, nil) {
							return
						}
					}
					last, seq = msg.ID, q
					if !yield(lease.Change{Row: row}, nil) {
						return
					}
				}
			}
		}
	}
}

// idLess reports whether stream ID a ("ms-seq") is below b.
func idLess(a, b string) bool {
	split := func(id string) (uint64, uint64) {
		ms, sq, _ := strings.Cut(id, "-")
		x, _ := strconv.ParseUint(ms, 10, 64)
		y, _ := strconv.ParseUint(sq, 10, 64)
		return x, y
	}
	am, as := split(a)
	bm, bs := split(b)
	return am < bm || (am == bm && as < bs)
}

// parseChange reads a feed entry: _item, _now (µs), _seq, _bids and the
// row's hash fields.
func parseChange(v map[string]any) (lease.Row, int64, error) {
	f := make(map[string]string, len(v))
	for k, x := range v {
		s, ok := x.(string)
		if !ok {
			return lease.Row{}, 0, fmt.Errorf("field %q is %T", k, x)
		}
		f[k] = s
	}
	id := f["_item"]
	now, err1 := strconv.ParseInt(f["_now"], 10, 64)
	seq, err2 := strconv.ParseInt(f["_seq"], 10, 64)
	nb, err3 := strconv.ParseInt(f["_bids"], 10, 64)
	if id == "" || err1 != nil || err2 != nil || err3 != nil {
		return lease.Row{}, 0, fmt.Errorf("malformed change (item %q): %w", id, errors.Join(err1, err2, err3))
	}
	return rowFromFields(id, now, nb, f), seq, nil
}

// transient reports whether err may go away by retrying: anything but an
// error reply of the server, except the replies of a server that is
// loading, busy or failing over.
func transient(err error) bool {
	if errors.Is(err, goredis.ErrClosed) {
		return false
	}
	var re goredis.Error
	if !errors.As(err, &re) {
		return true // a network error
	}
	msg := re.Error()
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
