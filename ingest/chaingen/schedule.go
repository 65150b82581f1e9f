package chaingen

import (
	"fmt"
	"math/rand/v2"
)

// schedule is the part of a chain's generator that decides which context
// each ad touches and how: the random picks and the live contexts. It
// holds no keys, blocks or multihashes, so [Lasting] runs it alone, fast,
// far past a chain's head, and finds what the chain will do.
type schedule struct {
	rng      *rand.PCG
	contexts int     // contexts made so far
	live     []int32 // contexts that hold multihashes
	livePos  []int   // index in live of each context, -1 if not live
}

func newSchedule(seed uint64) schedule {
	return schedule{rng: rand.NewPCG(seed, 0x9e3779b97f4a7c15)}
}

func (s *schedule) pick(n int) int { return int(s.rng.Uint64() % uint64(n)) }

// choose decides ad n (from 1): its kind and its context; fresh says the
// context is a new one (index ctx), which the caller makes.
func (s *schedule) choose(cfg *Config, n int) (kind opKind, ctx int32, fresh bool) {
	switch {
	case every(cfg.RemoveEvery, n) && len(s.live) > 0:
		return opRemove, s.live[s.pick(len(s.live))], false
	case every(cfg.UpdateEvery, n) && len(s.live) > 0:
		return opUpdate, s.live[s.pick(len(s.live))], false
	case every(cfg.ReuseEvery, n) && s.contexts > 0:
		return opPut, int32(s.pick(s.contexts)), false
	}
	ctx = int32(s.contexts)
	s.contexts++
	s.livePos = append(s.livePos, -1)
	kind = opPut
	if cfg.MhsPerAd == 0 {
		kind = opUpdate // an ad of new metadata and NoEntries
	}
	return kind, ctx, true
}

// apply records what ad did to the live contexts.
func (s *schedule) apply(kind opKind, ctx int32) {
	switch kind {
	case opPut:
		if s.livePos[ctx] < 0 {
			s.livePos[ctx] = len(s.live)
			s.live = append(s.live, ctx)
		}
	case opRemove:
		i := s.livePos[ctx]
		last := s.live[len(s.live)-1]
		s.live[i], s.livePos[last] = last, i
		s.live = s.live[:len(s.live)-1]
		s.livePos[ctx] = -1
	}
}

// Lasting finds a multihash that the chain cfg describes keeps, with the
// same value, up to its ad number horizon: the last new multihash of
// the earliest ad whose context no ad up to horizon removes, updates or
// reuses. It returns that multihash's ordinal ([AppendMultihash] with
// cfg.Seed makes it) and the number (from 1) of the ad that advertises
// it, or ok false when no ad up to horizon has one (MhsPerAd 0, or every
// context touched). A demo prints a lookup of it that stays valid while
// the chain grows to horizon ads, though removals pick their contexts at
// random. Its cost is a few nanoseconds per ad: no key, block or
// multihash is made. It fails only for an invalid cfg (errors wrap
// [ErrInvalidConfig]).
func Lasting(cfg Config, horizon int) (ordinal uint64, ad int, ok bool, err error) {
	cfg, err = cfg.normalize()
	if err != nil {
		return 0, 0, false, fmt.Errorf("chaingen: lasting: %w", err)
	}
	s := newSchedule(cfg.Seed)
	type start struct {
		ad      int
		ordinal uint64
	}
	var (
		first   []start // by context: the ad that made it, its first new multihash
		touched []bool  // by context: removed, updated or reused up to horizon
		next    uint64  // ordinal of the next new multihash
		prevNew uint64  // new multihashes of the latest ad with entries
	)
	for n := 1; n <= horizon; n++ {
		kind, ctx, fresh := s.choose(&cfg, n)
		if fresh {
			first = append(first, start{ad: -1})
			touched = append(touched, false)
		} else {
			touched[ctx] = true
		}
		if kind == opPut {
			shared := min(uint64(cfg.SharedMhs), prevNew)
			fresh := uint64(mhsOf(&cfg, n)) - shared
			// The last new one: the next ad shares the first ones
			// (SharedMhs), which would give it a second context.
			if fresh > uint64(cfg.SharedMhs) && first[ctx].ad < 0 {
				first[ctx] = start{ad: n, ordinal: next + fresh - 1}
			}
			next += fresh
			prevNew = fresh
		}
		s.apply(kind, ctx)
	}
	for i, f := range first {
		if f.ad > 0 && !touched[i] {
			return f.ordinal, f.ad, true, nil
		}
	}
	return 0, 0, false, nil
}
