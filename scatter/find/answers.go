package find

import (
	"hash/maphash"
	"net/http"
	"sync"

	"github.com/indexkit/indexkit/store"
)

// DefaultAnswerCache is the bytes a [Handler] spends on answers kept ready
// unless [WithAnswerCache] sets another.
const DefaultAnswerCache = 8 << 20

// answers keeps encoded find answers, by request path, for a Handler over
// a StoreBackend whose store is store.Versioned. An answer is served again
// only while the versions of everything it was built from are current:
// the multihash's index entries and their records (store.GetVersion) and
// each provider record it shows (store.ProviderVersion). So it is exact:
// no answer is served once a write that could change it has landed. A
// lookup it serves parses nothing, reads no store and encodes nothing.
type answers struct {
	shards [answerShards]answerShard
	max    int64 // bytes per shard
}

const answerShards = 32

type answerShard struct {
	mu   sync.RWMutex
	m    map[string]*answer
	size int64
	_    [40]byte
}

// answer is one kept answer: the JSON body of a 200, or nil for a 404.
type answer struct {
	body  []byte
	ver   store.Version
	provs []store.Version
	cost  int64
}

// current reports whether nothing a's answer was built from has changed.
func (a *answer) current() bool { return current(a.ver, a.provs) }

// current reports whether ver and every version of provs are current.
func current(ver store.Version, provs []store.Version) bool {
	if !ver.Current() {
		return false
	}
	for _, p := range provs {
		if !p.Current() {
			return false
		}
	}
	return true
}

var answerSeed = maphash.MakeSeed()

func newAnswers(budget int64) *answers {
	c := &answers{max: budget / answerShards}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*answer)
	}
	return c
}

func (c *answers) shard(path string) *answerShard {
	return &c.shards[maphash.String(answerSeed, path)%answerShards]
}

// get returns the answer kept for path if it is still current.
func (c *answers) get(path string) *answer {
	s := c.shard(path)
	s.mu.RLock()
	a := s.m[path]
	s.mu.RUnlock()
	if a == nil || !a.current() {
		return nil
	}
	return a
}

// put keeps body (nil: no results) as the answer of path, built from what
// ver and provs are the versions of. It keeps nothing already stale.
func (c *answers) put(path string, body []byte, ver store.Version, provs []store.Version) {
	cost := int64(len(path)+len(body)) + 160 + 16*int64(len(provs))
	if cost > c.max || !current(ver, provs) {
		return // before the copy: over a store without a lookup cache, no answer is current
	}
	a := &answer{ver: ver, provs: provs, cost: cost}
	if body != nil {
		a.body = append([]byte(nil), body...)
	}
	s := c.shard(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[path]; old != nil {
		s.size -= old.cost
	}
	// Make room: Go's map iteration starts at a random place, so this
	// evicts at random, which costs no bookkeeping on a hit.
	for k, e := range s.m {
		if s.size+a.cost <= c.max {
			break
		}
		if k != path {
			delete(s.m, k)
			s.size -= e.cost
		}
	}
	s.m[path] = a
	s.size += a.cost
}

// serve writes a kept answer as findJSON would have written it.
func (h *Handler) serveAnswer(w http.ResponseWriter, r *http.Request, a *answer) {
	if a.body == nil {
		h.noResults(w, r, nil)
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = hdrJSON
	hdr["Content-Length"] = contentLength(len(a.body))
	w.WriteHeader(http.StatusOK)
	w.Write(a.body)
}
