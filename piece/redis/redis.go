package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/piece"
)

// MaxCapacity bounds the reservoir capacity accepted by [WithCapacity] (the
// script passes 2k arguments to one ZADD).
const MaxCapacity = 1024

// Option configures a [Store].
type Option func(*config) error

type config struct {
	capacity int
	now      func() time.Time
	maxBatch int
}

// WithCapacity sets k, the number of payloads kept per (provider, piece):
// 1 to [MaxCapacity]; default [piece.DefaultCapacity]. Every process that
// shares a prefix must use the same k.
func WithCapacity(k int) Option {
	return func(c *config) error {
		if k < 1 || k > MaxCapacity {
			return fmt.Errorf("piece/redis: capacity %d out of range 1..%d", k, MaxCapacity)
		}
		c.capacity = k
		return nil
	}
}

// WithClock sets the clock that stamps [piece.Status.Updated]; default
// time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errors.New("piece/redis: nil clock")
		}
		c.now = now
		return nil
	}
}

// WithPipelining sets the most reservoir reads that [Store.Payloads] calls
// made at the same time share in one pipeline: 1 to 4096, default
// [DefaultMaxBatch]; 1 turns pipelining off (every call is its own round
// trip). A call made while no read is in flight goes out at once, so
// pipelining adds no wait to a lone request; calls that arrive while a read
// is in flight are sent together when it returns. See the package
// documentation (Pipelining of concurrent reads).
func WithPipelining(maxBatch int) Option {
	return func(c *config) error {
		if maxBatch < 1 || maxBatch > 4096 {
			return fmt.Errorf("piece/redis: pipelining batch %d out of range 1..4096", maxBatch)
		}
		c.maxBatch = maxBatch
		return nil
	}
}

// Store is the Redis [piece.Store].
type Store struct {
	rdb    goredis.UniversalClient
	prefix string
	k      int
	kArg   string
	now    func() time.Time
	reads  *reader
	closed atomic.Bool

	keysMu sync.RWMutex
	keys   map[peer.ID]string // providerKey's cache
}

var _ piece.Store = (*Store)(nil)

// New returns a store on rdb with keys under prefix (which may be empty,
// but should name the application, e.g. "piece:"). It does not contact the
// server.
func New(rdb goredis.UniversalClient, prefix string, opts ...Option) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("piece/redis: nil client")
	}
	c := config{capacity: piece.DefaultCapacity, now: time.Now, maxBatch: DefaultMaxBatch}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	return &Store{
		rdb: rdb, prefix: prefix, k: c.capacity, kArg: strconv.Itoa(c.capacity), now: c.now,
		reads: newReader(rdb, c.maxBatch), keys: make(map[peer.ID]string),
	}, nil
}

// Capacity returns k, the number of payloads kept per (provider, piece).
func (s *Store) Capacity() int { return s.k }

// maxProviderKeys bounds the cache of provider key prefixes.
const maxProviderKeys = 4096

// providerKey returns P{provider}, the start of every key of p. Encoding a
// peer ID in base58 costs more than the rest of building a key, so the
// strings are kept for up to maxProviderKeys providers (a pure function of
// the ID and the prefix: nothing read from Redis is cached).
func (s *Store) providerKey(p peer.ID) string {
	s.keysMu.RLock()
	k, ok := s.keys[p]
	s.keysMu.RUnlock()
	if ok {
		return k
	}
	k = s.prefix + "{" + p.String() + "}"
	s.keysMu.Lock()
	if len(s.keys) >= maxProviderKeys {
		clear(s.keys)
	}
	s.keys[p] = k
	s.keysMu.Unlock()
	return k
}

func (s *Store) statusKey(p peer.ID) string {
	return s.providerKey(p) + ":status"
}

func (s *Store) pieceKey(p peer.ID, c cid.Cid) string {
	return s.providerKey(p) + ":piece:" + c.String()
}

// Status hash fields.
const (
	fAddr     = "addr"
	fText     = "text"
	fErr      = "err"
	fLastHead = "lasthead"
	fHead     = "head"
	fWalked   = "walked"
	fNoPiece  = "nopiece"
	fUnretr   = "unretr"
	fPieces   = "pieces"
	fUpdated  = "updated"
)

// addScript: KEYS[1] reservoir ZSET, KEYS[2] status HASH; ARGV[1] k,
// ARGV[2] now (Unix ns), ARGV[3..] sorted distinct members (at most k).
var addScript = goredis.NewScript(`
redis.call('HSET', KEYS[2], 'updated', ARGV[2])
if #ARGV < 3 then return 0 end
local fresh = redis.call('EXISTS', KEYS[1]) == 0
local args = {}
for i = 3, #ARGV do
  args[#args + 1] = 0
  args[#args + 1] = ARGV[i]
end
redis.call('ZADD', KEYS[1], unpack(args))
redis.call('ZREMRANGEBYRANK', KEYS[1], tonumber(ARGV[1]), -1)
if fresh then
  redis.call('HINCRBY', KEYS[2], 'pieces', 1)
  return 1
end
return 0
`)

func checkArgs(op string, p peer.ID, c *cid.Cid) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("piece/redis: %s: invalid provider ID: %w", op, err)
	}
	if c != nil && !c.Defined() {
		return fmt.Errorf("piece/redis: %s: undefined piece CID", op)
	}
	return nil
}

func (s *Store) checkOpen(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("piece/redis: %s: %w", op, piece.ErrClosed)
	}
	return nil
}

// AddPayloads implements [piece.Store] in one round trip.
func (s *Store) AddPayloads(ctx context.Context, p peer.ID, pc cid.Cid, payloads ...cid.Cid) error {
	if err := checkArgs("AddPayloads", p, &pc); err != nil {
		return err
	}
	for i, c := range payloads {
		if !c.Defined() {
			return fmt.Errorf("piece/redis: AddPayloads: payload %d is an undefined CID", i)
		}
	}
	if err := s.checkOpen("AddPayloads"); err != nil {
		return err
	}
	keys := piece.SmallestKeys(p, pc, payloads, s.k)
	argv := make([]any, 0, 2+len(keys))
	argv = append(argv, s.kArg, strconv.FormatInt(s.now().UnixNano(), 10))
	for _, k := range keys {
		argv = append(argv, k)
	}
	if err := addScript.Run(ctx, s.rdb, []string{s.pieceKey(p, pc), s.statusKey(p)}, argv...).Err(); err != nil {
		return fmt.Errorf("piece/redis: AddPayloads of %s in %s: %w", pc, p, err)
	}
	return nil
}

// Payloads implements [piece.Store]: one ZRANGE when the piece is known,
// pipelined with the reads of concurrent calls (see [WithPipelining]).
func (s *Store) Payloads(ctx context.Context, p peer.ID, pc cid.Cid) ([]cid.Cid, error) {
	if err := checkArgs("Payloads", p, &pc); err != nil {
		return nil, err
	}
	if err := s.checkOpen("Payloads"); err != nil {
		return nil, err
	}
	members, err := s.reads.zrange(ctx, s.pieceKey(p, pc))
	if err != nil {
		if errors.Is(err, errClosed) {
			return nil, fmt.Errorf("piece/redis: Payloads: %w", piece.ErrClosed)
		}
		return nil, fmt.Errorf("piece/redis: Payloads of %s in %s: ZRANGE: %w", pc, p, err)
	}
	if len(members) == 0 {
		n, err := s.rdb.Exists(ctx, s.statusKey(p)).Result()
		switch {
		case err != nil:
			return nil, fmt.Errorf("piece/redis: Payloads of %s in %s: EXISTS: %w", pc, p, err)
		case n == 0:
			return nil, fmt.Errorf("piece/redis: Payloads of %s: %w", p, piece.ErrProviderNotFound)
		}
		return nil, fmt.Errorf("piece/redis: Payloads of %s in %s: %w", pc, p, piece.ErrPieceNotFound)
	}
	out := make([]cid.Cid, len(members))
	for i, m := range members {
		c, err := piece.PayloadFromKey(m)
		if err != nil {
			return nil, fmt.Errorf("piece/redis: Payloads of %s in %s: corrupt member %q: %w", pc, p, m, err)
		}
		out[i] = c
	}
	return out, nil
}

// UpdateStatus implements [piece.Store] in one MULTI/EXEC.
func (s *Store) UpdateStatus(ctx context.Context, p peer.ID, u piece.StatusUpdate) error {
	if err := checkArgs("UpdateStatus", p, nil); err != nil {
		return err
	}
	if err := s.checkOpen("UpdateStatus"); err != nil {
		return err
	}
	key := s.statusKey(p)
	fields := []any{fUpdated, strconv.FormatInt(s.now().UnixNano(), 10)}
	set := func(f string, v *string) {
		if v != nil {
			fields = append(fields, f, *v)
		}
	}
	set(fAddr, u.Address)
	set(fText, u.Text)
	set(fErr, u.LastError)
	setCid := func(f string, c *cid.Cid) {
		if c != nil {
			v := ""
			if c.Defined() {
				v = c.String()
			}
			fields = append(fields, f, v)
		}
	}
	setCid(fLastHead, u.LastHead)
	setCid(fHead, u.Head)
	_, err := s.rdb.TxPipelined(ctx, func(tx goredis.Pipeliner) error {
		incr := func(f string, n int64) {
			if n != 0 {
				tx.HIncrBy(ctx, key, f, n)
			}
		}
		incr(fWalked, u.Add.AdsWalked)
		incr(fNoPiece, u.Add.AdsWithoutPiece)
		incr(fUnretr, u.Add.EntriesUnretrievable)
		tx.HSet(ctx, key, fields...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("piece/redis: UpdateStatus of %s: %w", p, err)
	}
	return nil
}

// Status implements [piece.Store]: one HGETALL.
func (s *Store) Status(ctx context.Context, p peer.ID) (piece.Status, error) {
	if err := checkArgs("Status", p, nil); err != nil {
		return piece.Status{}, err
	}
	if err := s.checkOpen("Status"); err != nil {
		return piece.Status{}, err
	}
	h, err := s.rdb.HGetAll(ctx, s.statusKey(p)).Result()
	if err != nil {
		return piece.Status{}, fmt.Errorf("piece/redis: Status of %s: HGETALL: %w", p, err)
	}
	if len(h) == 0 {
		return piece.Status{}, fmt.Errorf("piece/redis: Status of %s: %w", p, piece.ErrProviderNotFound)
	}
	st := piece.Status{Provider: p, Address: h[fAddr], Text: h[fText], LastError: h[fErr]}
	bad := func(f string, err error) error {
		return fmt.Errorf("piece/redis: Status of %s: corrupt field %s %q: %w", p, f, h[f], err)
	}
	for _, f := range []struct {
		name string
		dst  *cid.Cid
	}{{fLastHead, &st.LastHead}, {fHead, &st.Head}} {
		if v := h[f.name]; v != "" {
			c, err := cid.Decode(v)
			if err != nil {
				return piece.Status{}, bad(f.name, err)
			}
			*f.dst = c
		}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{fWalked, &st.AdsWalked}, {fNoPiece, &st.AdsWithoutPiece}, {fUnretr, &st.EntriesUnretrievable}, {fPieces, &st.PiecesIndexed}} {
		if v := h[f.name]; v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return piece.Status{}, bad(f.name, err)
			}
			*f.dst = n
		}
	}
	if v := h[fUpdated]; v != "" {
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return piece.Status{}, bad(fUpdated, err)
		}
		st.Updated = time.Unix(0, ns)
	}
	return st, nil
}

// Close implements [piece.Store]. Payloads calls waiting to join a
// pipeline fail with [piece.ErrClosed]; Close waits for the pipeline in
// flight, if any, to end. It does not close the go-redis client. It is
// idempotent.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.reads.close()
	return nil
}
