package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/piece"
)

var _ piece.Walks = (*Store)(nil)

// walkKey is the key of a publisher's walk position (a STRING, see
// encodePosition) and claimKey that of its claim (a STRING holding the
// owner, with a TTL).
func (s *Store) walkKey(publisher peer.ID) string  { return s.providerKey(publisher) + ":walk" }
func (s *Store) claimKey(publisher peer.ID) string { return s.providerKey(publisher) + ":walkclaim" }

// encodePosition encodes p as "lastHead head tail walked" (CID strings,
// "-" for none), and the zero position as "" (the key's absence), so that
// the scripts compare positions as strings.
func encodePosition(p piece.WalkPosition) string {
	if p == (piece.WalkPosition{}) {
		return ""
	}
	c := func(c cid.Cid) string {
		if !c.Defined() {
			return "-"
		}
		return c.String()
	}
	return c(p.LastHead) + " " + c(p.Head) + " " + c(p.Tail) + " " + strconv.FormatInt(p.Walked, 10)
}

func decodePosition(v string) (piece.WalkPosition, error) {
	var p piece.WalkPosition
	if v == "" {
		return p, nil
	}
	f := strings.Fields(v)
	if len(f) != 4 {
		return p, fmt.Errorf("corrupt walk position %q", v)
	}
	for i, dst := range []*cid.Cid{&p.LastHead, &p.Head, &p.Tail} {
		if f[i] == "-" {
			continue
		}
		c, err := cid.Decode(f[i])
		if err != nil {
			return p, fmt.Errorf("corrupt walk position %q: %w", v, err)
		}
		*dst = c
	}
	n, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return p, fmt.Errorf("corrupt walk position %q: %w", v, err)
	}
	p.Walked = n
	return p, nil
}

// claimScript: KEYS[1] position, KEYS[2] claim; ARGV[1] owner, ARGV[2]
// TTL in ms. Returns {0, owner} if another owner holds the claim, else
// claims and returns {1, position}.
var claimScript = goredis.NewScript(`
local c = redis.call('GET', KEYS[2])
if c and c ~= ARGV[1] then return {0, c} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return {1, redis.call('GET', KEYS[1]) or ''}
`)

// stepScript: KEYS[1] position, KEYS[2] claim, KEYS[3] (optional) the
// provider's status; ARGV[1] owner, ARGV[2] TTL in ms, ARGV[3] from,
// ARGV[4] to, ARGV[5] now (Unix ns), ARGV[6..8] walked, nopiece, unretr.
// Returns 2 if another owner holds the claim, 1 if the position is not
// from, 0 once moved.
var stepScript = goredis.NewScript(`
local c = redis.call('GET', KEYS[2])
if c and c ~= ARGV[1] then return 2 end
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[3] then return 1 end
if ARGV[4] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[4])
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
if #KEYS > 2 then
  local f = {'walked', 'nopiece', 'unretr'}
  for i = 1, 3 do
    local n = tonumber(ARGV[5 + i])
    if n ~= 0 then redis.call('HINCRBY', KEYS[3], f[i], n) end
  end
  redis.call('HSET', KEYS[3], 'updated', ARGV[5])
end
return 0
`)

func ttlArg(ttl time.Duration) string { return strconv.FormatInt(max(ttl.Milliseconds(), 1), 10) }

// ClaimWalk implements [piece.Walks] in one script.
func (s *Store) ClaimWalk(ctx context.Context, publisher peer.ID, owner string, ttl time.Duration) (piece.WalkPosition, error) {
	if err := piece.CheckWalkArgs(publisher, owner, ttl); err != nil {
		return piece.WalkPosition{}, fmt.Errorf("piece/redis: ClaimWalk: %w", err)
	}
	if err := s.checkOpen("ClaimWalk"); err != nil {
		return piece.WalkPosition{}, err
	}
	res, err := claimScript.Run(ctx, s.rdb, []string{s.walkKey(publisher), s.claimKey(publisher)}, owner, ttlArg(ttl)).Slice()
	if err != nil {
		return piece.WalkPosition{}, fmt.Errorf("piece/redis: ClaimWalk of %s: %w", publisher, err)
	}
	if len(res) != 2 {
		return piece.WalkPosition{}, fmt.Errorf("piece/redis: ClaimWalk of %s: unexpected reply %v", publisher, res)
	}
	if ok, _ := res[0].(int64); ok != 1 {
		return piece.WalkPosition{}, fmt.Errorf("piece/redis: ClaimWalk of %s (held by %v): %w", publisher, res[1], piece.ErrWalkClaimed)
	}
	v, _ := res[1].(string)
	p, err := decodePosition(v)
	if err != nil {
		return p, fmt.Errorf("piece/redis: ClaimWalk of %s: %w", publisher, err)
	}
	return p, nil
}

// StepWalk implements [piece.Walks] in one script. On Redis Cluster the
// publisher's keys and the provider's status must share a slot, which
// they do when the provider is the publisher (the hash tags are theirs);
// the script of an advertisement of another provider is refused there
// (CROSSSLOT).
func (s *Store) StepWalk(ctx context.Context, publisher peer.ID, owner string, ttl time.Duration, step piece.WalkStep) error {
	if err := piece.CheckWalkArgs(publisher, owner, ttl); err != nil {
		return fmt.Errorf("piece/redis: StepWalk: %w", err)
	}
	keys := []string{s.walkKey(publisher), s.claimKey(publisher)}
	if step.Provider != "" {
		if err := checkArgs("StepWalk", step.Provider, nil); err != nil {
			return err
		}
		keys = append(keys, s.statusKey(step.Provider))
	}
	if err := s.checkOpen("StepWalk"); err != nil {
		return err
	}
	a := step.Add
	n, err := stepScript.Run(ctx, s.rdb, keys, owner, ttlArg(ttl), encodePosition(step.From), encodePosition(step.To),
		strconv.FormatInt(s.now().UnixNano(), 10),
		strconv.FormatInt(a.AdsWalked, 10), strconv.FormatInt(a.AdsWithoutPiece, 10), strconv.FormatInt(a.EntriesUnretrievable, 10)).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("piece/redis: StepWalk of %s: %w", publisher, err)
	case n == 2:
		return fmt.Errorf("piece/redis: StepWalk of %s: %w", publisher, piece.ErrWalkClaimed)
	case n == 1:
		return fmt.Errorf("piece/redis: StepWalk of %s: %w", publisher, piece.ErrWalkMoved)
	case n != 0:
		return fmt.Errorf("piece/redis: StepWalk of %s: %w", publisher, errors.New("unexpected script reply"))
	}
	return nil
}
