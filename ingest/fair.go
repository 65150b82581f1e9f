package ingest

import (
	"cmp"
	"math"
	"net/netip"
	"slices"
	"time"
)

// The publishers that never verified are announced by anyone, so the
// Ingester shares what they cost (a place among the unverified
// publishers, a check worker) among the sources that announce them: a
// source is the network an announce came from ([SourceOf]), and none may
// hold more than a fair share while others want room. A source whose
// publishers failed to verify goes behind those whose did not.
//
// sourceHalfLife is how fast a source's failures are forgiven: its score
// halves every sourceHalfLife.
const sourceHalfLife = time.Minute

// SourceOf is the source, for the fair shares of [Ingester.AnnounceFrom],
// of an announce from the address ip: its IPv4 /24 or its IPv6 /48, the
// networks one party commonly holds whole. An invalid ip is "".
func SourceOf(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	ip = ip.Unmap().WithZone("")
	bits := 48
	if ip.Is4() {
		bits = 24
	}
	p, _ := ip.Prefix(bits)
	return p.String()
}

// source is what the Ingester knows of one source of announces.
type source struct {
	held    int       // publishers that never verified, announced from here, in pubs
	running int       // of those, head checks running now
	score   float64   // failures to verify, decayed by sourceHalfLife as of at
	at      time.Time // when score was last brought up to date
	served  time.Time // when a check of one of its publishers last started
}

// failures is the source's decayed failure score at now.
func (s *source) failures(now time.Time) float64 {
	if s.score == 0 {
		return 0
	}
	return s.score * math.Exp2(-now.Sub(s.at).Seconds()/sourceHalfLife.Seconds())
}

// failed adds a failure to the source's score.
func (s *source) failed(now time.Time) {
	s.score, s.at = s.failures(now)+1, now
}

// sourceLocked returns the state of source key, making it if needed; nil
// for "" (a trusted caller, which has no share).
func (i *Ingester) sourceLocked(key string) *source {
	if key == "" {
		return nil
	}
	s := i.srcs[key]
	if s == nil {
		s = &source{}
		i.srcs[key] = s
	}
	return s
}

// holdLocked counts p, which never verified, against its source.
func (i *Ingester) holdLocked(p *publisher, key string) {
	p.source = key
	if s := i.sourceLocked(key); s != nil {
		s.held++
	}
}

// releaseLocked stops counting p against its source: it verified, or it is
// forgotten.
func (i *Ingester) releaseLocked(p *publisher) {
	if p.source == "" {
		return
	}
	if s := i.srcs[p.source]; s != nil && s.held > 0 {
		s.held--
	}
	p.source = ""
}

// pruneSourcesLocked forgets the sources that hold nothing and whose
// failures are all but forgiven, and keeps the table at most
// maxSources() long by forgetting the least failed of those holding
// nothing.
func (i *Ingester) pruneSourcesLocked(now time.Time) {
	var idle []string
	for k, s := range i.srcs {
		if s.held > 0 || s.running > 0 {
			continue
		}
		if s.failures(now) < 0.05 {
			delete(i.srcs, k)
			continue
		}
		idle = append(idle, k)
	}
	if over := len(i.srcs) - i.maxSources(); over > 0 {
		slices.SortFunc(idle, func(a, b string) int { return cmp.Compare(i.srcs[a].failures(now), i.srcs[b].failures(now)) })
		for _, k := range idle[:min(over, len(idle))] {
			delete(i.srcs, k)
		}
	}
}

// maxSources bounds the sources remembered: every source holding a
// publisher, and as many again remembered for their failures.
func (i *Ingester) maxSources() int { return 2 * i.cfg.maxUnverified }

// fairShareLocked is how many publishers that never verified one source
// may hold while the table is full: an equal share among the sources
// holding some, counting key's.
func (i *Ingester) fairShareLocked(key string) int {
	n := 0
	for k, s := range i.srcs {
		if s.held > 0 || k == key {
			n++
		}
	}
	return max(1, i.cfg.maxUnverified/max(n, 1))
}

// evictFromLargestLocked makes room for a publisher from a source under
// its fair share: it forgets one publisher that never verified and is not
// being checked, of the source holding the most (more than mine + 1, so
// that shares converge instead of swapping), a failed one first, else the
// one announced last. It reports whether it made room.
func (i *Ingester) evictFromLargestLocked(mine int) bool {
	var big string
	most := mine + 1
	for k, s := range i.srcs {
		if s.held > most {
			big, most = k, s.held
		}
	}
	if big == "" {
		return false
	}
	var victim *publisher
	for _, p := range i.pubs {
		if p.source != big || p.verified || p.walking {
			continue
		}
		switch {
		case victim == nil:
			victim = p
		case (p.lastErr != nil) != (victim.lastErr != nil):
			if p.lastErr != nil {
				victim = p
			}
		case p.announced.After(victim.announced):
			victim = p
		}
	}
	if victim == nil {
		return false
	}
	i.log.Debug("forgetting a publisher that never verified, to make room for another source's", "publisher", victim.id.String(), "source", big)
	i.evicted++
	i.forgetLocked(victim)
	return true
}

// pickNewLocked returns the index in ready (publishers that never
// verified, queued) of the one to check next: of the source with the
// fewest checks running, then the fewest failures, then the one served
// longest ago (a source never served first), then the one queued first.
// It returns -1 when there is none, or when every candidate's source
// already runs its fair share of the workers.
func (i *Ingester) pickNewLocked(ready []*publisher, workers int, now time.Time) int {
	waiting := make(map[string]bool)
	for _, p := range ready {
		if p.queued && !p.walking {
			waiting[p.source] = true
		}
	}
	share := max(1, (workers+len(waiting)-1)/max(len(waiting), 1))
	best := -1
	var bRun int
	var bFail float64
	var bServed time.Time
	for j, p := range ready {
		if p.walking || !p.queued {
			continue
		}
		run, fail, served := 0, 0.0, time.Time{}
		if s := i.srcs[p.source]; s != nil {
			run, fail, served = s.running, s.failures(now), s.served
			if run >= share {
				continue
			}
		}
		better := best < 0
		if !better {
			switch {
			case run != bRun:
				better = run < bRun
			case fail != bFail:
				better = fail < bFail
			case !served.Equal(bServed):
				better = served.Before(bServed)
			default:
				better = p.seq < ready[best].seq
			}
		}
		if better {
			best, bRun, bFail, bServed = j, run, fail, served
		}
	}
	return best
}

// UnverifiedStats counts what the Ingester does with publishers that
// never verified, for metrics ([Ingester.Unverified]).
type UnverifiedStats struct {
	Held     int    // held now, waiting for their check or failed
	Sources  int    // sources remembered now (holding some, or for their failures)
	Checking int    // head checks running now
	Refused  uint64 // new publishers refused for want of room (ErrTooManyPublishers)
	Evicted  uint64 // forgotten to make room for another source's
	Failed   uint64 // head checks that failed
}

// Unverified returns the counts of publishers that never verified.
func (i *Ingester) Unverified() UnverifiedStats {
	i.mu.Lock()
	defer i.mu.Unlock()
	return UnverifiedStats{Held: i.unverified, Sources: len(i.srcs), Checking: i.checking,
		Refused: i.refused, Evicted: i.evicted, Failed: i.failedNew}
}
