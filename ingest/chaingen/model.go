package chaingen

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// maxDiffs bounds the differences an error of [Model.Equal] lists.
const maxDiffs = 10

// Model is the ground truth of a chain at some ad: the live contexts, each
// (provider, context ID) with its metadata and its set of multihashes. A
// removed context is absent; a context that never held a multihash is
// absent too. See the package documentation for the rules that build it.
//
// A Model is immutable and safe for concurrent use.
type Model struct {
	seed  uint64
	ctxs  []modelCtx                    // live contexts, by context index
	index map[[sha256.Size]byte]int32   // digest -> position in ctxs of its first context
	more  map[[sha256.Size]byte][]int32 // digest -> positions of its other contexts, if any

	formOnce sync.Once
	forms    map[[store.DigestPrefixLen]byte][sha256.Size]byte // 20-byte digest prefix -> digest, for byForm
}

type modelCtx struct {
	v     store.Value
	spans []span
}

// Model returns the ground truth after every ad of the chain, oldest to
// newest.
func (c *Chain) Model() *Model {
	c.mu.RLock()
	ops := c.ops
	c.mu.RUnlock()
	return c.model(ops)
}

// ModelAt returns the ground truth after ads 0 to i inclusive (Ads[i] is
// the last one applied). An i below 0 gives the empty model; an i past the
// newest ad gives [Chain.Model].
func (c *Chain) ModelAt(i int) *Model {
	c.mu.RLock()
	ops := c.ops[:max(0, min(i+1, len(c.ops)))]
	c.mu.RUnlock()
	return c.model(ops)
}

// model replays ops. Its cost is linear in the multihashes of the live
// contexts.
func (c *Chain) model(ops []op) *Model {
	states := make(map[int32]*modelCtx)
	for _, o := range ops {
		st := states[o.ctx]
		switch o.kind {
		case opPut:
			if st == nil {
				st = &modelCtx{v: store.Value{ProviderID: c.Provider, ContextID: o.ctxID}}
				states[o.ctx] = st
			}
			st.v.Metadata = o.meta
			st.spans = append(st.spans, o.spans...)
		case opUpdate:
			if st != nil {
				st.v.Metadata = o.meta
			}
		case opRemove:
			delete(states, o.ctx)
		}
	}
	keys := make([]int32, 0, len(states))
	for k := range states {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	m := &Model{seed: c.cfg.Seed, ctxs: make([]modelCtx, len(keys))}
	var total uint64
	for i, k := range keys {
		m.ctxs[i] = *states[k]
		for _, s := range m.ctxs[i].spans {
			total += s.n
		}
	}
	m.index = make(map[[sha256.Size]byte]int32, total)
	m.more = make(map[[sha256.Size]byte][]int32)
	for pos := range m.ctxs {
		p := int32(pos)
		for _, s := range m.ctxs[pos].spans {
			for ord := s.start; ord < s.start+s.n; ord++ {
				d := mhDigest(m.seed, ord)
				first, ok := m.index[d]
				switch {
				case !ok:
					m.index[d] = p
				case first == p:
				default:
					// Positions of one context are added together, so a
					// repeat within it is the last one.
					if o := m.more[d]; len(o) == 0 || o[len(o)-1] != p {
						m.more[d] = append(o, p)
					}
				}
			}
		}
	}
	return m
}

// digest returns the sha2-256 digest of mh, if it is one.
func digest(mh multihash.Multihash) ([sha256.Size]byte, bool) {
	var d [sha256.Size]byte
	if len(mh) != 2+sha256.Size || mh[0] != multihash.SHA2_256 || mh[1] != sha256.Size {
		return d, false
	}
	copy(d[:], mh[2:])
	return d, true
}

// byForm returns the digest of the model's multihash whose
// [store.IndexKey] is form, if form is one of those (a sha2-256 multihash
// cut to 20 bytes); the map is made on first use.
func (m *Model) byForm(form multihash.Multihash) ([sha256.Size]byte, bool) {
	var p [store.DigestPrefixLen]byte
	if len(form) != 2+len(p) || form[0] != multihash.SHA2_256 || form[1] != byte(len(p)) {
		return [sha256.Size]byte{}, false
	}
	m.formOnce.Do(func() {
		m.forms = make(map[[store.DigestPrefixLen]byte][sha256.Size]byte, len(m.index))
		for d := range m.index {
			m.forms[[store.DigestPrefixLen]byte(d[:store.DigestPrefixLen])] = d
		}
	})
	copy(p[:], form[2:])
	d, ok := m.forms[p]
	return d, ok
}

// Values returns the values of mh, one per live context holding it, in
// the order the contexts were first advertised; nil if it has none. The
// values are copies.
func (m *Model) Values(mh multihash.Multihash) []store.Value {
	d, ok := digest(mh)
	if !ok {
		return nil
	}
	return m.values(d)
}

func (m *Model) values(d [sha256.Size]byte) []store.Value {
	first, ok := m.index[d]
	if !ok {
		return nil
	}
	vs := []store.Value{m.ctxs[first].v.Clone()}
	for _, p := range m.more[d] {
		vs = append(vs, m.ctxs[p].v.Clone())
	}
	return vs
}

// Multihashes returns the number of distinct multihashes that have at
// least one value.
func (m *Model) Multihashes() int { return len(m.index) }

// Contexts returns the value of every live context, in the order the
// contexts were first advertised.
func (m *Model) Contexts() []store.Value {
	vs := make([]store.Value, len(m.ctxs))
	for i := range m.ctxs {
		vs[i] = m.ctxs[i].v.Clone()
	}
	return vs
}

// Equal returns nil if s holds exactly the model's entries: every
// multihash of the model with exactly its values (compared as sets), and
// no other multihash with any value. Otherwise it returns an error
// wrapping [ErrMismatch] that counts the differences and lists the first
// few. It reads the whole store with All, then every model multihash with
// Get; errors of s are returned wrapped as they are. Provider records are
// not compared. A store keyed on digest prefixes yields each multihash in
// that form ([store.IndexKey]): Equal matches it to the model's multihash
// of that form.
func (m *Model) Equal(ctx context.Context, s store.Store) error {
	var (
		diffs []string
		extra int                                // multihashes in s, not in m
		bad   = make(map[[sha256.Size]byte]bool) // model multihashes s gets wrong
	)
	note := func(format string, args ...any) {
		if len(diffs) < maxDiffs {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	for e, err := range s.All(ctx) {
		if err != nil {
			return fmt.Errorf("chaingen: compare: store All: %w", err)
		}
		if len(e.Values) == 0 {
			continue
		}
		d, ok := digest(e.Multihash)
		if !ok {
			d, ok = m.byForm(e.Multihash)
		}
		want := []store.Value(nil)
		if ok {
			want = m.values(d)
		}
		switch {
		case len(want) == 0:
			extra++
			note("%s: not in the model; All yields %s", e.Multihash.B58String(), fmtValues(e.Values))
		case !sameValues(e.Values, want):
			bad[d] = true
			note("%s: All yields %s; model has %s", e.Multihash.B58String(), fmtValues(e.Values), fmtValues(want))
		}
	}
	mh := make(multihash.Multihash, 0, 2+sha256.Size)
	for pos := range m.ctxs {
		for _, sp := range m.ctxs[pos].spans {
			for ord := sp.start; ord < sp.start+sp.n; ord++ {
				mh = appendMultihash(mh[:0], m.seed, ord)
				d, _ := digest(mh)
				if m.index[d] != int32(pos) || bad[d] {
					continue // checked under its first context, or already noted
				}
				got, err := s.Get(ctx, mh)
				if err != nil {
					return fmt.Errorf("chaingen: compare: store Get %s: %w", mh.B58String(), err)
				}
				if want := m.values(d); !sameValues(got, want) {
					bad[d] = true
					note("%s: Get returns %s; model has %s", mh.B58String(), fmtValues(got), fmtValues(want))
				}
			}
		}
	}
	if n := extra + len(bad); n > 0 {
		return fmt.Errorf("%w: %d multihashes differ (model has %d), first %d:\n\t%s",
			ErrMismatch, n, m.Multihashes(), len(diffs), strings.Join(diffs, "\n\t"))
	}
	return nil
}

// sameValues reports whether a and b hold the same values, in any order.
func sameValues(a, b []store.Value) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
outer:
	for _, x := range a {
		for j, y := range b {
			if !used[j] && x.Equal(y) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

func fmtValues(vs []store.Value) string {
	if len(vs) == 0 {
		return "no values"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmtValue(v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtValue(v store.Value) string {
	meta := v.Metadata
	suffix := ""
	if len(meta) > 12 {
		meta, suffix = meta[:12], "…"
	}
	return fmt.Sprintf("{%s ctx=%x md=%x%s}", shortID(v.ProviderID), v.ContextID, meta, suffix)
}

func shortID(id peer.ID) string {
	s := id.String()
	if len(s) > 10 {
		return "…" + s[len(s)-6:]
	}
	return s
}
