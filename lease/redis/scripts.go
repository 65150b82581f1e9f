package redis

import (
	"strconv"

	goredis "github.com/redis/go-redis/v9"
)

// Every script starts with the prelude: the server's clock (TIME, in
// microseconds) and helpers. Numbers are formatted with %.0f before they
// are written, since Lua's tostring keeps only 14 digits and a fence or an
// expiry in microseconds has 16.
var prelude = `
local FEEDMAX = ` + feedMaxLenLua + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function n(v) return tonumber(v or '0') or 0 end
local function s(x) return string.format('%.0f', x) end
local function load(key)
  local a = redis.call('HGETALL', key)
  if #a == 0 then return nil end
  local r = {}
  for i = 1, #a, 2 do r[a[i]] = a[i + 1] end
  return r
end
-- expire turns a lapsed lease into an idle row.
local function expire(key, r)
  if (r.owner or '') ~= '' and now >= n(r.exp) then
    redis.call('HSET', key, 'owner', '', 'state', '0', 'ready', '0', 'exp', '0')
    r.owner, r.state, r.ready, r.exp = '', '0', '0', '0'
  end
end
-- emit appends the row at rowk, as this script leaves it, to the change
-- feed: the stream streamk, trimmed to about FeedMaxLen entries, with a
-- sequence number from seqk that lets a reader see a gap (see watch.go).
local function emit(streamk, seqk, rowk, bidk, item)
  local a = redis.call('HGETALL', rowk)
  if #a == 0 then return end
  local nb, open = 0, false
  for i = 1, #a, 2 do if a[i] == 'open' and a[i + 1] == '1' then open = true end end
  if open then nb = redis.call('LLEN', bidk) end
  local q = redis.call('INCR', seqk)
  local x = {'XADD', streamk, 'MAXLEN', '~', FEEDMAX, '*', '_item', item, '_now', s(now), '_seq', q, '_bids', nb}
  for i = 1, #a do x[#x + 1] = a[i] end
  redis.call(unpack(x))
end
-- check is the owner check of a Ref: nil if current, else an error code.
local function check(r, holder, fence)
  local f = n(r.fence)
  if fence < f then return 6 end
  if fence > f or (r.owner or '') == '' or r.owner ~= holder then return 7 end
  return nil
end
`

// cfg is the configuration every auction script gets as ARGV[1..9]:
// TTL µs, window µs, pending-marker PX ms, static MaxBids, dynamic (0/1),
// liveness µs, live bidders only (0/1), key prefix, loss-guard hold µs (0:
// off).
const auction = `
local TTL, WINDOW, PEND = n(ARGV[1]), n(ARGV[2]), ARGV[3]
local MAXBIDS, DYN, LIVE, LIVEONLY, P = n(ARGV[4]), ARGV[5] == '1', n(ARGV[6]), ARGV[7] == '1', ARGV[8]
local GUARD = n(ARGV[9])
local function prune(nodek)
  redis.call('ZREMRANGEBYSCORE', nodek, '-inf', s(now - LIVE))
end
local function threshold(r, nodek)
  local o = n(r.maxbids)
  if o > 0 then return o end
  if DYN then
    prune(nodek)
    local live = redis.call('ZCOUNT', nodek, '(' .. s(now - LIVE), '+inf')
    if live > 0 then return live end
  end
  return MAXBIDS
end
local function live(nodek, node)
  local sc = redis.call('ZSCORE', nodek, node)
  return sc and now - tonumber(sc) < LIVE
end
-- evaluate closes the item's auction if it is due. It returns
-- {outcome, round, winner, fence, expiry, bids, unleased, short, timedout, deadline, threshold}
-- with outcome 0 no auction, 1 not due, 2 granted, 3 no winner.
local function evaluate(rowk, bidk, nodek, r, item, streamk, seqk)
  if r.open ~= '1' then return {0, 0, '', 0, 0, 0, n(r.unleased), 0, 0, 0, 0} end
  local round, dl = n(r.round), n(r.deadline)
  local nb = redis.call('LLEN', bidk)
  local timed = now >= dl
  local th = threshold(r, nodek)
  local short = th > 0 and nb >= th
  if not timed and not short then return {1, round, '', 0, 0, nb, n(r.unleased), 0, 0, dl, th} end
  -- The loss guard: the epoch key is set once and never deleted, so its
  -- absence means the data is new or was lost. Grants wait until one
  -- hold after the epoch; the auction stays open with its bids, and its
  -- deadline reads as the end of the hold.
  if GUARD > 0 then
    local ek = P .. 'epoch'
    local ep = n(redis.call('GET', ek))
    if ep == 0 then
      ep = now
      redis.call('SET', ek, s(ep))
    end
    if now < ep + GUARD then return {1, round, '', 0, 0, nb, n(r.unleased), 0, 0, ep + GUARD, th} end
  end
  local list = redis.call('LRANGE', bidk, 0, -1)
  redis.call('DEL', bidk)
  local tag = s(round) .. ':' .. item
  local minbid = n(r.minbid)
  local best, bestfree = nil, -1
  for _, e in ipairs(list) do
    local c = string.find(e, ':', 1, true)
    local free = tonumber(string.sub(e, 1, c - 1))
    local node = string.sub(e, c + 1)
    local pk = P .. '{node:' .. node .. '}:pending'
    if redis.call('GET', pk) == tag then redis.call('DEL', pk) end
    if free >= minbid and (not LIVEONLY or live(nodek, node)) and free > bestfree then
      best, bestfree = node, free
    end
  end
  local sf, tf = 0, 0
  if timed then tf = 1 elseif short then sf = 1 end
  if best == nil or (r.owner or '') ~= '' then
    redis.call('HSET', rowk, 'open', '0', 'deadline', '0')
    local u = redis.call('HINCRBY', rowk, 'unleased', 1)
    emit(streamk, seqk, rowk, bidk, item)
    return {3, round, '', 0, 0, nb, u, sf, tf, dl, th}
  end
  -- The fence: one more than the last, and never below the server's clock
  -- in microseconds, so it keeps growing after a restart that lost the row.
  local fence = math.max(n(r.fence) + 1, now)
  local exp = now + TTL
  redis.call('HSET', rowk, 'open', '0', 'deadline', '0', 'owner', best, 'state', '1', 'ready', '0',
    'exp', s(exp), 'fence', s(fence), 'unleased', '0')
  emit(streamk, seqk, rowk, bidk, item)
  return {2, round, best, fence, exp, nb, 0, sf, tf, dl, th}
end
`

// Result codes shared by the scripts.
const (
	codeOK       = 0
	codeNotFound = 1
	codeLeased   = 2
	codeTooLow   = 3
	codePending  = 4
	codeClosed   = 5
	codeStale    = 6
	codeNotHeld  = 7
	codeVersion  = 8
)

// put: KEYS row, bids, stream, seq; ARGV commit, size, maxbids, minbid,
// item.
var putScript = goredis.NewScript(prelude + `
redis.call('HSET', KEYS[1], 'commit', ARGV[1], 'size', ARGV[2], 'maxbids', ARGV[3], 'minbid', ARGV[4])
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
emit(KEYS[3], KEYS[4], KEYS[1], KEYS[2], ARGV[5])
return v
`)

// get: KEYS row, bids. Read-only: it returns {now, bids, HGETALL...} and
// the caller applies the lapse of an expired lease, as every writing
// script does in place.
var getScript = goredis.NewScript(prelude + `
local a = redis.call('HGETALL', KEYS[1])
if #a == 0 then return {} end
local out = {now, redis.call('LLEN', KEYS[2])}
for i = 1, #a do out[#out + 1] = a[i] end
return out
`)

// bid: KEYS row, bids, nodes, pending marker of the node, stream, seq;
// ARGV cfg..., item, node, free. Returns {code, started, round, seq, bids,
// closed, E...}.
var bidScript = goredis.NewScript(prelude + auction + `
local rowk, bidk, nodek, pendk, streamk, seqk = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local item, node, free = ARGV[10], ARGV[11], ARGV[12]
local r = load(rowk)
if not r then return {1} end
expire(rowk, r)
if (r.owner or '') ~= '' then return {2} end
if tonumber(free) < n(r.minbid) then return {3} end
if redis.call('EXISTS', pendk) == 1 then return {4} end
local res
if r.open == '1' and now >= n(r.deadline) then
  res = {5, 0, 0, 0, 0, 1}
else
  local started = 0
  if r.open ~= '1' then
    r.round, r.deadline, r.open = s(n(r.round) + 1), s(now + WINDOW), '1'
    redis.call('HSET', rowk, 'round', r.round, 'open', '1', 'deadline', r.deadline)
    redis.call('DEL', bidk)
    started = 1
  end
  local nb = redis.call('RPUSH', bidk, free .. ':' .. node)
  redis.call('SET', pendk, r.round .. ':' .. item, 'PX', PEND)
  local th = threshold(r, nodek)
  if th > 0 and nb >= th then
    res = {0, started, n(r.round), nb, nb, 1}
  else
    emit(streamk, seqk, rowk, bidk, item)
    return {0, started, n(r.round), nb, nb, 0}
  end
end
local e = evaluate(rowk, bidk, nodek, r, item, streamk, seqk)
-- A bid that closed the auction is reported by the evaluation's change
-- alone; one the loss guard holds open is reported here.
if res[1] == 0 and e[1] < 2 then emit(streamk, seqk, rowk, bidk, item) end
for i = 1, #e do res[#res + 1] = e[i] end
return res
`)

// evaluate: KEYS row, bids, nodes, stream, seq; ARGV cfg..., item. Returns
// {code, E...}.
var evaluateScript = goredis.NewScript(prelude + auction + `
local r = load(KEYS[1])
if not r then return {1} end
expire(KEYS[1], r)
local res = {0}
local e = evaluate(KEYS[1], KEYS[2], KEYS[3], r, ARGV[10], KEYS[4], KEYS[5])
for i = 1, #e do res[#res + 1] = e[i] end
return res
`)

// renew: KEYS the rows; ARGV TTL µs, then holder and fence per row.
// Returns {code, expiry} per row.
var renewScript = goredis.NewScript(prelude + `
local ttl = n(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local holder, fence = ARGV[2 * i], tonumber(ARGV[2 * i + 1])
  -- Only the fields the owner check needs: a renewal is the hot path, and
  -- HGETALL of the whole row costs twice as much. Every row has a version.
  local a = redis.call('HMGET', key, 'version', 'owner', 'fence', 'exp')
  local r = nil
  if a[1] then r = {owner = a[2] or '', fence = a[3], exp = a[4]} end
  local code, exp = 1, 0
  if r then
    expire(key, r)
    code = check(r, holder, fence) or 0
    if code == 0 then
      exp = now + ttl
      redis.call('HSET', key, 'exp', s(exp))
    end
  end
  out[#out + 1] = code
  out[#out + 1] = exp
end
return out
`)

// release: KEYS row, bids, stream, seq; ARGV holder, fence, item. Returns
// {code}.
var releaseScript = goredis.NewScript(prelude + `
local r = load(KEYS[1])
if not r then return {1} end
expire(KEYS[1], r)
local c = check(r, ARGV[1], tonumber(ARGV[2]))
if c then return {c} end
redis.call('HSET', KEYS[1], 'owner', '', 'state', '0', 'ready', '0', 'exp', '0')
emit(KEYS[3], KEYS[4], KEYS[1], KEYS[2], ARGV[3])
return {0}
`)

// update: KEYS row, bids, stream, seq; ARGV holder, fence, then flag/value
// pairs: commit, ready, size (with minbid), last indexed, if-version,
// draining; then the item (ARGV[15]).
// Returns {code} or {0, now, bids, HGETALL...}.
var updateScript = goredis.NewScript(prelude + `
local key = KEYS[1]
local r = load(key)
if not r then return {1} end
expire(key, r)
local c = check(r, ARGV[1], tonumber(ARGV[2]))
if c then return {c} end
if ARGV[11] == '1' and n(r.version) ~= n(ARGV[12]) then return {8} end
if ARGV[3] == '1' then redis.call('HSET', key, 'commit', ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', key, 'ready', ARGV[6]) end
if ARGV[7] == '1' then redis.call('HSET', key, 'size', ARGV[8], 'minbid', ARGV[13]) end
if ARGV[9] == '1' then redis.call('HSET', key, 'last', ARGV[10]) end
if ARGV[14] == '1' then redis.call('HSET', key, 'state', '2') end
redis.call('HINCRBY', key, 'version', 1)
emit(KEYS[3], KEYS[4], key, KEYS[2], ARGV[15])
local out = {0, now, redis.call('LLEN', KEYS[2])}
local a = redis.call('HGETALL', key)
for i = 1, #a do out[#out + 1] = a[i] end
return out
`)

// heartbeat: KEYS nodes; ARGV node, liveness µs. Records the beat and
// prunes the nodes that are no longer live.
var heartbeatScript = goredis.NewScript(prelude + `
redis.call('ZADD', KEYS[1], s(now), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', s(now - n(ARGV[2])))
return 0
`)

// live: KEYS nodes; ARGV liveness µs. Prunes, then counts the live nodes.
var liveScript = goredis.NewScript(prelude + `
local cut = now - n(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', s(cut))
return redis.call('ZCOUNT', KEYS[1], '(' .. s(cut), '+inf')
`)

// FeedMaxLen is about how many entries the change feed keeps (XADD MAXLEN
// ~, which trims whole stream nodes, so a few more): a watcher that falls
// further behind gets a Reset.
const FeedMaxLen = 10000

var feedMaxLenLua = strconv.Itoa(FeedMaxLen)

// tail: KEYS stream, seq. Returns {last entry ID or "0-0", seq}: where a
// watcher starts, read in one step so that no entry falls between them.
var tailScript = goredis.NewScript(`
local e = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local id = '0-0'
if #e > 0 then id = e[1][1] end
return {id, tonumber(redis.call('GET', KEYS[2]) or '0')}
`)
