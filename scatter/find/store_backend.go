package find

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// DefaultProviderTTL is how long a [StoreBackend] keeps a provider record it
// read for Find.
const DefaultProviderTTL = time.Second

// storeCacheMax bounds the provider records a StoreBackend keeps; when it is
// full, the expired ones are dropped, and if that is not enough, all.
const storeCacheMax = 1 << 16

// StoreBackendOption configures a [StoreBackend] ([NewStoreBackend]). An
// option given an invalid value makes NewStoreBackend fail with an error
// wrapping [ErrInvalidOption].
type StoreBackendOption func(*storeBackendConfig) error

type storeBackendConfig struct {
	ttl time.Duration
}

// WithProviderTTL sets how long Find may use a provider record after reading
// it from the store (default [DefaultProviderTTL]): a changed address or
// extended provider shows in find results at most this late. Over a store
// that is [store.Versioned] (store/pebble, store/leveldb), the record is
// used for as long as its version is current instead, so that a change
// shows at once; the TTL then only says whether to cache at all. In the last
// eighth of that time, the first lookup to use the record reads it again
// while the others go on using it, so that a busy provider's record is
// renewed before it expires rather than by every lookup in flight when it
// does. Zero reads the record for every lookup; a negative d is invalid.
func WithProviderTTL(d time.Duration) StoreBackendOption {
	return func(c *storeBackendConfig) error {
		if d < 0 {
			return fmt.Errorf("%w: provider TTL %v, want zero or more", ErrInvalidOption, d)
		}
		c.ttl = d
		return nil
	}
}

// StoreBackend is a [Backend] over a local [store.Store]: the find API of
// one indexer node. It is safe for concurrent use.
type StoreBackend struct {
	s   store.Store
	vs  store.Versioned // s, if it is; nil otherwise
	ttl time.Duration

	mu    sync.RWMutex
	cache map[peer.ID]*storeProvider
}

var _ Backend = (*StoreBackend)(nil)

// NewStoreBackend returns a Backend answering from s. It does not take
// ownership of s: closing s is the caller's job. It fails with an error
// wrapping [ErrInvalidOption] when s is nil or an option is invalid.
func NewStoreBackend(s store.Store, opts ...StoreBackendOption) (*StoreBackend, error) {
	if s == nil {
		return nil, fmt.Errorf("find: store backend: %w: nil store", ErrInvalidOption)
	}
	cfg := storeBackendConfig{ttl: DefaultProviderTTL}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("find: store backend: %w", err)
		}
	}
	b := &StoreBackend{s: s, ttl: cfg.ttl}
	b.vs, _ = s.(store.Versioned)
	return b, nil
}

// storeProvider is a provider record as Find uses it. When the store has
// no record of the provider, info holds its ID alone (no addresses) and ep
// is nil: its values are still answered (see [StoreBackend.Find]).
type storeProvider struct {
	ver       store.Version // over a store.Versioned: fresh while current
	expires   time.Time
	refreshAt time.Time      // from here to expires, one lookup reads it again
	refresh   atomic.Bool    // that lookup is under way
	info      *peer.AddrInfo // shared by every result of this provider; read-only
	ep        *storeExtended
}

// storeExtended is a provider's extended providers, ready to expand.
type storeExtended struct {
	chain      []storeEP
	contextual map[string]storeContextual
}

type storeContextual struct {
	override  bool
	providers []storeEP
}

type storeEP struct {
	info     *peer.AddrInfo
	metadata []byte // nil: use the value's metadata
}

// Find yields the results of the values stored for mh, in store order: for
// each value, the provider itself, then the
// extended providers of the value's context, then (unless those override
// them) the provider's chain-level extended providers. An extended provider
// without its own metadata gets the value's. An entry naming the provider
// itself is skipped when its metadata is empty or the value's (it would
// repeat the main result); with other metadata it is a second result for
// the same provider, advertising another transport, as the reference does.
//
// A value whose provider has no record in the store (store.PutProvider was
// never called for it) is still answered: its result carries the provider
// ID with no addresses, and no extended providers. An IPNI client always
// gets a Provider with an ID; the reference (storetheindex) drops such
// values instead, which makes content that was indexed vanish from find
// answers with a 404 and nothing to say why. A client that needs addresses
// looks the provider up elsewhere (its peer routing) by that ID.
//
// The results share their Provider, ContextID and Metadata with the store
// and the backend's cache; they must not be modified.
func (b *StoreBackend) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[ProviderResult, error] {
	return func(yield func(ProviderResult, error) bool) {
		err := b.each(ctx, mh, func(pr ProviderResult) bool { return yield(pr, nil) })
		if err != nil {
			yield(ProviderResult{}, err)
		}
	}
}

// each calls fn with the results of Find, in the same order, until fn
// returns false, and returns the error Find would yield last. pr is
// shared as Find's results are: fn must not modify it. The handler calls it directly: unlike the iterator of
// Find, a call with a closure that does not escape allocates nothing.
func (b *StoreBackend) each(ctx context.Context, mh multihash.Multihash, fn func(pr ProviderResult) bool) error {
	values, err := b.s.Get(ctx, mh)
	if err != nil {
		return fmt.Errorf("find: store find: %w", err)
	}
	return b.eachValue(ctx, values, fn, nil)
}

// eachVersion is each over a store.Versioned, which also returns the
// versions of what the results were built from: the values' and those of
// the provider records, one each (nil when a record has none). The results are
// current while they all are.
func (b *StoreBackend) eachVersion(ctx context.Context, mh multihash.Multihash, fn func(pr ProviderResult) bool) (store.Version, []store.Version, error) {
	values, ver, err := b.vs.GetVersion(ctx, mh)
	if err != nil {
		return nil, nil, fmt.Errorf("find: store find: %w", err)
	}
	var provs []store.Version
	pp := &provs
	if !ver.Current() {
		pp = nil // stale already, or a store that keeps no versions: nothing will keep this answer
	}
	err = b.eachValue(ctx, values, fn, pp)
	return ver, provs, err
}

// eachValue calls fn with the results of values, as each does, and adds
// to provs (when not nil) the version of each provider record it used.
func (b *StoreBackend) eachValue(ctx context.Context, values []store.Value, fn func(pr ProviderResult) bool, provs *[]store.Version) error {
	var now time.Time
	for _, v := range values {
		if now.IsZero() && b.ttl > 0 {
			now = time.Now()
		}
		p, err := b.lookup(ctx, v.ProviderID, now)
		if err != nil {
			return err
		}
		if provs != nil {
			*provs = append(*provs, p.ver)
		}
		if !fn(ProviderResult{ContextID: v.ContextID, Metadata: v.Metadata, Provider: p.info}) {
			return nil
		}
		if p.ep == nil {
			continue
		}
		override := false
		if c, ok := p.ep.contextual[string(v.ContextID)]; ok {
			override = c.override
			if !storeYieldExtended(fn, c.providers, v) {
				return nil
			}
		}
		if !override && !storeYieldExtended(fn, p.ep.chain, v) {
			return nil
		}
	}
	return nil
}

// storeYieldExtended yields the results of the extended providers eps for value
// v, and reports whether to go on.
func storeYieldExtended(fn func(ProviderResult) bool, eps []storeEP, v store.Value) bool {
	for _, ep := range eps {
		if ep.info.ID == v.ProviderID && (len(ep.metadata) == 0 || bytes.Equal(ep.metadata, v.Metadata)) {
			continue
		}
		md := ep.metadata
		if md == nil {
			md = v.Metadata
		}
		if !fn(ProviderResult{ContextID: v.ContextID, Metadata: md, Provider: ep.info}) {
			return false
		}
	}
	return true
}

// lookup returns the provider record of id as Find uses it, from the cache
// while it is fresh: over a store.Versioned, while its version is current;
// otherwise for the TTL. now is zero when caching is off.
func (b *StoreBackend) lookup(ctx context.Context, id peer.ID, now time.Time) (*storeProvider, error) {
	if b.ttl > 0 {
		b.mu.RLock()
		p := b.cache[id]
		b.mu.RUnlock()
		if p != nil && p.ver != nil {
			if p.ver.Current() {
				return p, nil
			}
		} else if p != nil && now.Before(p.expires) && (now.Before(p.refreshAt) || !p.refresh.CompareAndSwap(false, true)) {
			// In the last eighth of its life, the first lookup to see a
			// record reads it again while the others still use it: under
			// load, a busy provider's record is renewed before it expires
			// instead of by every lookup in flight when it does (each
			// reading the store and taking the write lock, every other
			// lookup waiting).
			return p, nil
		}
	}
	var (
		info store.ProviderInfo
		ver  store.Version
		err  error
	)
	if b.vs != nil && b.ttl > 0 {
		info, ver, err = b.vs.ProviderVersion(ctx, id)
	} else {
		info, err = b.s.Provider(ctx, id)
	}
	var p *storeProvider
	switch {
	case errors.Is(err, store.ErrNotFound):
		p = &storeProvider{info: &peer.AddrInfo{ID: id}}
	case err != nil:
		return nil, fmt.Errorf("find: store find: provider %s: %w", id, err)
	default:
		p = newStoreProvider(&info)
	}
	if b.ttl > 0 {
		p.ver = ver
		p.expires = now.Add(b.ttl)
		p.refreshAt = p.expires.Add(-b.ttl / 8)
		b.mu.Lock()
		if b.cache == nil {
			b.cache = make(map[peer.ID]*storeProvider)
		}
		if len(b.cache) >= storeCacheMax {
			for k, e := range b.cache {
				if e.ver != nil && !e.ver.Current() || e.ver == nil && !now.Before(e.expires) {
					delete(b.cache, k)
				}
			}
			if len(b.cache) >= storeCacheMax {
				clear(b.cache)
			}
		}
		b.cache[id] = p
		b.mu.Unlock()
	}
	return p, nil
}

func newStoreProvider(info *store.ProviderInfo) *storeProvider {
	p := &storeProvider{info: &peer.AddrInfo{ID: info.AddrInfo.ID, Addrs: info.AddrInfo.Addrs}}
	x := info.ExtendedProviders
	if x == nil {
		return p
	}
	// The reference keeps an empty record too: a contextual entry with
	// Override and no providers still hides the chain-level ones.
	p.ep = &storeExtended{chain: storeEPs(x.Providers, x.Metadatas)}
	if len(x.Contextual) > 0 {
		p.ep.contextual = make(map[string]storeContextual, len(x.Contextual))
		for _, c := range x.Contextual {
			p.ep.contextual[string(c.ContextID)] = storeContextual{
				override:  c.Override,
				providers: storeEPs(c.Providers, c.Metadatas),
			}
		}
	}
	return p
}

func storeEPs(infos []peer.AddrInfo, metadatas [][]byte) []storeEP {
	eps := make([]storeEP, len(infos))
	for i := range infos {
		eps[i].info = &peer.AddrInfo{ID: infos[i].ID, Addrs: infos[i].Addrs}
		if i < len(metadatas) {
			eps[i].metadata = metadatas[i]
		}
	}
	return eps
}

// Providers returns every provider record of the store, converted to the
// find API's shape (see [ProviderInfoFromStore]).
func (b *StoreBackend) Providers(ctx context.Context) ([]ProviderInfo, error) {
	infos := []ProviderInfo{}
	for info, err := range b.s.Providers(ctx) {
		if err != nil {
			return nil, fmt.Errorf("find: store providers: %w", err)
		}
		infos = append(infos, ProviderInfoFromStore(&info))
	}
	return infos, nil
}

// Provider returns the record of id, or an error wrapping [ErrNotFound].
func (b *StoreBackend) Provider(ctx context.Context, id peer.ID) (ProviderInfo, error) {
	info, err := b.s.Provider(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return ProviderInfo{}, fmt.Errorf("find: store provider %s: %w", id, ErrNotFound)
		}
		return ProviderInfo{}, fmt.Errorf("find: store provider %s: %w", id, err)
	}
	return ProviderInfoFromStore(&info), nil
}

// ProviderInfoFromStore converts a stored provider record to the find API's
// ProviderInfo, as the reference converts its registry records:
//
//   - times are RFC 3339 strings in UTC, omitted when zero;
//     LastAdvertisementTime only with a LastAdvertisement, LastErrorTime only
//     with a LastError;
//   - undefined CIDs stay undefined, which encodes as JSON null;
//   - Publisher is set when the record names a publisher;
//   - extended providers carry one Metadatas element per provider (null
//     where the provider has none), and a contextual entry's ContextID is
//     the string of its bytes.
//
// Lag and Inactive stay zero: a store does not record them.
func ProviderInfoFromStore(info *store.ProviderInfo) ProviderInfo {
	out := ProviderInfo{AddrInfo: info.AddrInfo}
	if info.LastAdvertisement.Defined() {
		out.LastAdvertisement = info.LastAdvertisement
		out.LastAdvertisementTime = storeFormatTime(info.LastAdvertisementTime)
	}
	if info.LastError != "" {
		out.LastError = info.LastError
		out.LastErrorTime = storeFormatTime(info.LastErrorTime)
	}
	if info.Publisher.ID != "" {
		out.Publisher = &peer.AddrInfo{ID: info.Publisher.ID, Addrs: info.Publisher.Addrs}
	}
	if info.FrozenAt.Defined() {
		out.FrozenAt = info.FrozenAt
	}
	out.FrozenAtTime = storeFormatTime(info.FrozenAtTime)
	if x := info.ExtendedProviders; x != nil {
		ep := &ExtendedProviders{}
		ep.Providers, ep.Metadatas = storeExtendedToAPI(x.Providers, x.Metadatas)
		for _, c := range x.Contextual {
			provs, mds := storeExtendedToAPI(c.Providers, c.Metadatas)
			ep.Contextual = append(ep.Contextual, ContextualExtendedProviders{
				Override:  c.Override,
				ContextID: string(c.ContextID),
				Providers: provs,
				Metadatas: mds,
			})
		}
		out.ExtendedProviders = ep
	}
	return out
}

func storeExtendedToAPI(infos []peer.AddrInfo, metadatas [][]byte) ([]peer.AddrInfo, [][]byte) {
	if len(infos) == 0 {
		return nil, nil
	}
	mds := make([][]byte, len(infos))
	copy(mds, metadatas)
	return infos, mds
}

func storeFormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
