package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/piece"
)

// MaxCapacity bounds the reservoir capacity accepted by [WithCapacity].
const MaxCapacity = 1 << 16

// Option configures a [Store].
type Option func(*config) error

type config struct {
	capacity int
	now      func() time.Time
}

// WithCapacity sets k, the number of payloads kept per (provider, piece):
// 1 to [MaxCapacity]; default [piece.DefaultCapacity].
func WithCapacity(k int) Option {
	return func(c *config) error {
		if k < 1 || k > MaxCapacity {
			return fmt.Errorf("piece/memory: capacity %d out of range 1..%d", k, MaxCapacity)
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
			return errors.New("piece/memory: nil clock")
		}
		c.now = now
		return nil
	}
}

// Store is the in-memory [piece.Store]. The zero value is not usable; call
// [New].
type Store struct {
	k   int
	now func() time.Time

	mu        sync.RWMutex
	closed    bool
	providers map[peer.ID]*provider
	walks     map[peer.ID]*walk
}

// walk is a publisher's walk position and claim.
type walk struct {
	pos   piece.WalkPosition
	owner string
	until time.Time // the claim's expiry
}

type provider struct {
	st     piece.Status
	pieces map[cid.Cid]*reservoir
}

// reservoir holds the kept payloads in ascending key order.
type reservoir struct {
	keys     []string // piece.PayloadKey of each payload
	payloads []cid.Cid
}

var (
	_ piece.Store = (*Store)(nil)
	_ piece.Walks = (*Store)(nil)
)

// New returns an empty store.
func New(opts ...Option) (*Store, error) {
	c := config{capacity: piece.DefaultCapacity, now: time.Now}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	return &Store{k: c.capacity, now: c.now, providers: make(map[peer.ID]*provider), walks: make(map[peer.ID]*walk)}, nil
}

// Capacity returns k, the number of payloads kept per (provider, piece).
func (s *Store) Capacity() int { return s.k }

func checkArgs(op string, p peer.ID, c *cid.Cid) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("piece/memory: %s: invalid provider ID: %w", op, err)
	}
	if c != nil && !c.Defined() {
		return fmt.Errorf("piece/memory: %s: undefined piece CID", op)
	}
	return nil
}

// AddPayloads implements [piece.Store].
func (s *Store) AddPayloads(ctx context.Context, p peer.ID, pc cid.Cid, payloads ...cid.Cid) error {
	if err := checkArgs("AddPayloads", p, &pc); err != nil {
		return err
	}
	for i, c := range payloads {
		if !c.Defined() {
			return fmt.Errorf("piece/memory: AddPayloads: payload %d is an undefined CID", i)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("piece/memory: AddPayloads: %w", err)
	}
	keys := piece.SmallestKeys(p, pc, payloads, s.k)
	cids := make([]cid.Cid, len(keys))
	for i, k := range keys {
		c, err := piece.PayloadFromKey(k)
		if err != nil {
			return fmt.Errorf("piece/memory: AddPayloads: %w", err)
		}
		cids[i] = c
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("piece/memory: AddPayloads: %w", piece.ErrClosed)
	}
	prov := s.provider(p)
	prov.st.Updated = s.now()
	if len(keys) == 0 {
		return nil
	}
	r := prov.pieces[pc]
	if r == nil {
		r = &reservoir{}
		prov.pieces[pc] = r
		prov.st.PiecesIndexed++
	}
	r.merge(keys, cids, s.k)
	return nil
}

// merge merges the sorted, distinct keys into r, keeping the k smallest.
func (r *reservoir) merge(keys []string, cids []cid.Cid, k int) {
	n := min(len(r.keys)+len(keys), k)
	mk := make([]string, 0, n)
	mc := make([]cid.Cid, 0, n)
	i, j := 0, 0
	for len(mk) < k && (i < len(r.keys) || j < len(keys)) {
		switch {
		case j == len(keys) || (i < len(r.keys) && r.keys[i] < keys[j]):
			mk, mc = append(mk, r.keys[i]), append(mc, r.payloads[i])
			i++
		case i == len(r.keys) || keys[j] < r.keys[i]:
			mk, mc = append(mk, keys[j]), append(mc, cids[j])
			j++
		default: // equal: already kept
			mk, mc = append(mk, r.keys[i]), append(mc, r.payloads[i])
			i++
			j++
		}
	}
	r.keys, r.payloads = mk, mc
}

// provider returns p's record, creating it. s.mu must be held for writing.
func (s *Store) provider(p peer.ID) *provider {
	prov := s.providers[p]
	if prov == nil {
		prov = &provider{st: piece.Status{Provider: p}, pieces: make(map[cid.Cid]*reservoir)}
		s.providers[p] = prov
	}
	return prov
}

// Payloads implements [piece.Store].
func (s *Store) Payloads(ctx context.Context, p peer.ID, pc cid.Cid) ([]cid.Cid, error) {
	if err := checkArgs("Payloads", p, &pc); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("piece/memory: Payloads: %w", piece.ErrClosed)
	}
	prov := s.providers[p]
	if prov == nil {
		return nil, fmt.Errorf("piece/memory: Payloads of %s: %w", p, piece.ErrProviderNotFound)
	}
	r := prov.pieces[pc]
	if r == nil {
		return nil, fmt.Errorf("piece/memory: Payloads of %s in %s: %w", pc, p, piece.ErrPieceNotFound)
	}
	return slices.Clone(r.payloads), nil
}

// UpdateStatus implements [piece.Store].
func (s *Store) UpdateStatus(ctx context.Context, p peer.ID, u piece.StatusUpdate) error {
	if err := checkArgs("UpdateStatus", p, nil); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("piece/memory: UpdateStatus: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("piece/memory: UpdateStatus: %w", piece.ErrClosed)
	}
	st := &s.provider(p).st
	st.AdsWalked += u.Add.AdsWalked
	st.AdsWithoutPiece += u.Add.AdsWithoutPiece
	st.EntriesUnretrievable += u.Add.EntriesUnretrievable
	if u.Address != nil {
		st.Address = *u.Address
	}
	if u.Text != nil {
		st.Text = *u.Text
	}
	if u.LastError != nil {
		st.LastError = *u.LastError
	}
	if u.LastHead != nil {
		st.LastHead = *u.LastHead
	}
	if u.Head != nil {
		st.Head = *u.Head
	}
	st.Updated = s.now()
	return nil
}

// Status implements [piece.Store].
func (s *Store) Status(ctx context.Context, p peer.ID) (piece.Status, error) {
	if err := checkArgs("Status", p, nil); err != nil {
		return piece.Status{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return piece.Status{}, fmt.Errorf("piece/memory: Status: %w", piece.ErrClosed)
	}
	prov := s.providers[p]
	if prov == nil {
		return piece.Status{}, fmt.Errorf("piece/memory: Status of %s: %w", p, piece.ErrProviderNotFound)
	}
	return prov.st, nil
}

// Close implements [piece.Store]: it drops the data. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.providers, s.walks = nil, nil
	return nil
}

// ClaimWalk implements [piece.Walks]; claims expire by the store's clock
// ([WithClock]).
func (s *Store) ClaimWalk(ctx context.Context, publisher peer.ID, owner string, ttl time.Duration) (piece.WalkPosition, error) {
	if err := piece.CheckWalkArgs(publisher, owner, ttl); err != nil {
		return piece.WalkPosition{}, fmt.Errorf("piece/memory: ClaimWalk: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return piece.WalkPosition{}, fmt.Errorf("piece/memory: ClaimWalk: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return piece.WalkPosition{}, fmt.Errorf("piece/memory: ClaimWalk: %w", piece.ErrClosed)
	}
	w, now := s.walk(publisher), s.now()
	if w.owner != owner && now.Before(w.until) {
		return piece.WalkPosition{}, fmt.Errorf("piece/memory: ClaimWalk of %s: %w", publisher, piece.ErrWalkClaimed)
	}
	w.owner, w.until = owner, now.Add(ttl)
	return w.pos, nil
}

// StepWalk implements [piece.Walks].
func (s *Store) StepWalk(ctx context.Context, publisher peer.ID, owner string, ttl time.Duration, step piece.WalkStep) error {
	if err := piece.CheckWalkArgs(publisher, owner, ttl); err != nil {
		return fmt.Errorf("piece/memory: StepWalk: %w", err)
	}
	if step.Provider != "" {
		if err := checkArgs("StepWalk", step.Provider, nil); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("piece/memory: StepWalk: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("piece/memory: StepWalk: %w", piece.ErrClosed)
	}
	w, now := s.walk(publisher), s.now()
	switch {
	case w.owner != owner && now.Before(w.until):
		return fmt.Errorf("piece/memory: StepWalk of %s: %w", publisher, piece.ErrWalkClaimed)
	case !samePosition(w.pos, step.From):
		return fmt.Errorf("piece/memory: StepWalk of %s: %w", publisher, piece.ErrWalkMoved)
	}
	w.pos, w.owner, w.until = step.To, owner, now.Add(ttl)
	if step.Provider != "" {
		st := &s.provider(step.Provider).st
		st.AdsWalked += step.Add.AdsWalked
		st.AdsWithoutPiece += step.Add.AdsWithoutPiece
		st.EntriesUnretrievable += step.Add.EntriesUnretrievable
		st.Updated = now
	}
	return nil
}

// walk returns publisher's walk, creating it. s.mu must be held for
// writing.
func (s *Store) walk(publisher peer.ID) *walk {
	w := s.walks[publisher]
	if w == nil {
		w = &walk{}
		s.walks[publisher] = w
	}
	return w
}

func samePosition(a, b piece.WalkPosition) bool {
	return a.LastHead.Equals(b.LastHead) && a.Head.Equals(b.Head) && a.Tail.Equals(b.Tail) && a.Walked == b.Walked
}
