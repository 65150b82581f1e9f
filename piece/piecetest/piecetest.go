package piecetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/piece"
)

// Factory returns a fresh, empty store keeping capacity payloads per
// (provider, piece). It registers its own cleanup (t.Cleanup); the suite
// may Close the store itself as well.
type Factory func(t *testing.T, capacity int) piece.Store

// Run runs the conformance suite against the stores newStore makes.
func Run(t *testing.T, newStore Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"BottomKModel", testBottomKModel},
		{"FixedVector", testFixedVector},
		{"Idempotent", testIdempotent},
		{"OrderIndependent", testOrderIndependent},
		{"Capacity", testCapacity},
		{"NotFound", testNotFound},
		{"ProvidersIsolated", testProvidersIsolated},
		{"Status", testStatus},
		{"EmptyOffer", testEmptyOffer},
		{"InvalidArguments", testInvalid},
		{"Concurrent", testConcurrent},
		{"Close", testClose},
		{"Walks", testWalks},
		{"WalksConcurrent", testWalksConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore) })
	}
}

// Provider returns a deterministic Ed25519-style (identity multihash)
// peer ID for i.
func Provider(i int) peer.ID {
	var pub [36]byte // protobuf of an Ed25519 public key: 08 01 12 20 ‖ 32 bytes
	copy(pub[:4], []byte{0x08, 0x01, 0x12, 0x20})
	sum := sha256.Sum256(fmt.Appendf(nil, "piecetest provider %d", i))
	copy(pub[4:], sum[:])
	m, err := mh.Sum(pub[:], mh.IDENTITY, -1)
	if err != nil {
		panic(err)
	}
	return peer.ID(m)
}

// CID returns a deterministic CIDv1 (raw, sha2-256) for the label.
func CID(label string) cid.Cid {
	m, err := mh.Sum([]byte(label), mh.SHA2_256, -1)
	if err != nil {
		panic(err)
	}
	return cid.NewCidV1(cid.Raw, m)
}

// PieceCID returns a deterministic CIDv1 with the fil-commitment-unsealed
// codec, like a real PieceCID.
func PieceCID(i int) cid.Cid {
	sum := sha256.Sum256(fmt.Appendf(nil, "piece %d", i))
	sum[31] &= 0x3f // 254 bits, as a real commitment
	m, err := mh.Encode(sum[:], mh.SHA2_256_TRUNC254_PADDED)
	if err != nil {
		panic(err)
	}
	return cid.NewCidV1(cid.FilCommitmentUnsealed, m)
}

// Payloads returns n payload CIDs labelled from from.
func Payloads(from, n int) []cid.Cid {
	out := make([]cid.Cid, n)
	for i := range out {
		out[i] = CID(fmt.Sprintf("payload %d", from+i))
	}
	return out
}

// Expect returns the bottom-k sample of payloads for (p, pc) by brute force:
// all distinct payloads, sorted by piece.PayloadKey, the first k.
func Expect(p peer.ID, pc cid.Cid, payloads []cid.Cid, k int) []cid.Cid {
	type kv struct {
		key string
		c   cid.Cid
	}
	m := map[string]cid.Cid{}
	for _, c := range payloads {
		m[piece.PayloadKey(p, pc, c)] = c
	}
	all := make([]kv, 0, len(m))
	for k, c := range m {
		all = append(all, kv{k, c})
	}
	slices.SortFunc(all, func(a, b kv) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	out := []cid.Cid{}
	for i := 0; i < len(all) && i < k; i++ {
		out = append(out, all[i].c)
	}
	return out
}

func ctx(t *testing.T) context.Context { return t.Context() }

func mustAdd(t *testing.T, s piece.Store, p peer.ID, pc cid.Cid, payloads ...cid.Cid) {
	t.Helper()
	if err := s.AddPayloads(ctx(t), p, pc, payloads...); err != nil {
		t.Fatalf("AddPayloads(%s, %s, %d payloads): %v", p, pc, len(payloads), err)
	}
}

func mustPayloads(t *testing.T, s piece.Store, p peer.ID, pc cid.Cid) []cid.Cid {
	t.Helper()
	got, err := s.Payloads(ctx(t), p, pc)
	if err != nil {
		t.Fatalf("Payloads(%s, %s): %v", p, pc, err)
	}
	return got
}

func mustStatus(t *testing.T, s piece.Store, p peer.ID) piece.Status {
	t.Helper()
	st, err := s.Status(ctx(t), p)
	if err != nil {
		t.Fatalf("Status(%s): %v", p, err)
	}
	return st
}

func equal(t *testing.T, what string, got, want []cid.Cid) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// testBottomKModel offers random batches (with repeats) to random
// (provider, piece) pairs and compares every reservoir with the model.
func testBottomKModel(t *testing.T, newStore Factory) {
	for _, k := range []int{1, 4, piece.DefaultCapacity} {
		t.Run(fmt.Sprint("k=", k), func(t *testing.T) {
			s := newStore(t, k)
			rng := rand.New(rand.NewPCG(uint64(k), 42))
			type pair struct {
				p  peer.ID
				pc cid.Cid
			}
			offered := map[pair][]cid.Cid{}
			pieces := map[peer.ID]map[cid.Cid]bool{}
			for range 60 {
				pr := pair{Provider(rng.IntN(3)), PieceCID(rng.IntN(5))}
				batch := Payloads(rng.IntN(200), rng.IntN(3*k+2))
				mustAdd(t, s, pr.p, pr.pc, batch...)
				offered[pr] = append(offered[pr], batch...)
				if len(batch) > 0 {
					if pieces[pr.p] == nil {
						pieces[pr.p] = map[cid.Cid]bool{}
					}
					pieces[pr.p][pr.pc] = true
				}
			}
			for pr, all := range offered {
				want := Expect(pr.p, pr.pc, all, k)
				if len(want) == 0 {
					continue
				}
				equal(t, fmt.Sprintf("Payloads(%s, %s)", pr.p, pr.pc), mustPayloads(t, s, pr.p, pr.pc), want)
			}
			for p, ps := range pieces {
				if got := mustStatus(t, s, p).PiecesIndexed; got != int64(len(ps)) {
					t.Errorf("Status(%s).PiecesIndexed = %d, want %d", p, got, len(ps))
				}
			}
		})
	}
}

// testFixedVector pins a reservoir to values computed outside Go from
// [piece.PayloadHash]'s documented formula (see piece's
// sample_vectors_test.go), so that a store is checked against the formula
// itself and not only against piece.PayloadKey: of six payloads offered
// (with repeats) under capacity 3, the store keeps these three, in this
// order.
func testFixedVector(t *testing.T, newStore Factory) {
	dec := func(ss ...string) []cid.Cid {
		out := make([]cid.Cid, len(ss))
		for i, s := range ss {
			c, err := cid.Decode(s)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = c
		}
		return out
	}
	p, err := peer.Decode("12D3KooWGT2YpdT4ARd8wWJigsREMHZgZZVJft6gRDiDrfPboNak")
	if err != nil {
		t.Fatal(err)
	}
	pc := dec("baga6ea4seaqhotmbp4trjkitw24tduqknn6zaxhd2xvwn5wmibutcqzilnbjckq")[0]
	offered := dec(
		"bafkreialkdaws3doa32zmdlfouluso6xcj2nr6vkgusoqf4fmm5z44uo4u", // hash 0xc180c3b4370fc8f7
		"bafkreido5jtjx42wdle36uclo2b5kirgoumb4tbvniorl6nyk7bo2mgfwe", // 0xbdd7b60b3b55615d
		"bafkreigsvanqwpi6uwf3v7gv4pqq43wbvrga67uqd3ghz7642wrquh2bni", // 0xfc7c2e3f9f1c6d2a
		"bafkreifig6zdpbkc46figrcgf5bfun5gyvk7apmehkir3eqa2kvsuwl52u", // 0xc8b6a0ccba21d79a
		"QmNWBLEhbMPayg7n96wHaKo4WXYP396yGMcEXK6AnyJ64u",              // 0x64489a80a8439179
		"bafybeiacodne3kwfctzqx3hfpcfipll3qahvsr3nbv7g64guwyp3yt26ty", // 0x894ad5d08f5a9118
	)
	want := []cid.Cid{offered[4], offered[5], offered[1]}
	s := newStore(t, 3)
	mustAdd(t, s, p, pc, offered[2], offered[0], offered[2])
	mustAdd(t, s, p, pc, offered[5], offered[3])
	mustAdd(t, s, p, pc, offered[1], offered[4], offered[0])
	equal(t, "kept of the fixed vector", mustPayloads(t, s, p, pc), want)
}

func testIdempotent(t *testing.T, newStore Factory) {
	s := newStore(t, 8)
	p, pc := Provider(1), PieceCID(1)
	batch := Payloads(0, 20)
	mustAdd(t, s, p, pc, batch...)
	first := mustPayloads(t, s, p, pc)
	st1 := mustStatus(t, s, p)
	// Re-offer the whole batch, parts of it, and duplicates within a batch.
	mustAdd(t, s, p, pc, batch...)
	mustAdd(t, s, p, pc, batch[3:9]...)
	mustAdd(t, s, p, pc, batch[0], batch[0], batch[5], batch[0])
	equal(t, "Payloads after re-offers", mustPayloads(t, s, p, pc), first)
	equal(t, "Payloads vs model", first, Expect(p, pc, batch, 8))
	st2 := mustStatus(t, s, p)
	if st2.PiecesIndexed != 1 || st1.PiecesIndexed != 1 {
		t.Errorf("PiecesIndexed = %d then %d, want 1 and 1", st1.PiecesIndexed, st2.PiecesIndexed)
	}
}

func testOrderIndependent(t *testing.T, newStore Factory) {
	p, pc := Provider(2), PieceCID(2)
	all := Payloads(0, 50)
	a, b := newStore(t, 5), newStore(t, 5)
	// a: one payload at a time, forwards; b: shuffled batches of 7.
	for _, c := range all {
		mustAdd(t, a, p, pc, c)
	}
	sh := slices.Clone(all)
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
	for i := 0; i < len(sh); i += 7 {
		mustAdd(t, b, p, pc, sh[i:min(i+7, len(sh))]...)
	}
	want := Expect(p, pc, all, 5)
	equal(t, "one at a time", mustPayloads(t, a, p, pc), want)
	equal(t, "shuffled batches", mustPayloads(t, b, p, pc), want)
}

func testCapacity(t *testing.T, newStore Factory) {
	for _, k := range []int{1, 3, piece.DefaultCapacity, 40} {
		t.Run(fmt.Sprint("k=", k), func(t *testing.T) {
			s := newStore(t, k)
			p, pc := Provider(3), PieceCID(3)
			few := Payloads(0, k-1)
			if len(few) > 0 {
				mustAdd(t, s, p, pc, few...)
				if got := mustPayloads(t, s, p, pc); len(got) != len(few) {
					t.Fatalf("with %d offered, kept %d, want all", len(few), len(got))
				}
			}
			all := Payloads(0, 3*k+5)
			mustAdd(t, s, p, pc, all...)
			got := mustPayloads(t, s, p, pc)
			if len(got) != k {
				t.Fatalf("with %d offered and capacity %d, kept %d", len(all), k, len(got))
			}
			equal(t, "kept", got, Expect(p, pc, all, k))
		})
	}
}

func testNotFound(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	p, q, pc := Provider(4), Provider(5), PieceCID(4)
	if _, err := s.Payloads(ctx(t), p, pc); !errors.Is(err, piece.ErrProviderNotFound) {
		t.Errorf("Payloads of an unknown provider: err = %v, want ErrProviderNotFound", err)
	}
	if _, err := s.Status(ctx(t), p); !errors.Is(err, piece.ErrProviderNotFound) {
		t.Errorf("Status of an unknown provider: err = %v, want ErrProviderNotFound", err)
	}
	mustAdd(t, s, p, pc, Payloads(0, 3)...)
	_, err := s.Payloads(ctx(t), p, PieceCID(99))
	if !errors.Is(err, piece.ErrPieceNotFound) {
		t.Errorf("Payloads of an unknown piece of a known provider: err = %v, want ErrPieceNotFound", err)
	}
	if errors.Is(err, piece.ErrProviderNotFound) {
		t.Errorf("Payloads of an unknown piece also wraps ErrProviderNotFound: %v", err)
	}
	if _, err := s.Payloads(ctx(t), q, pc); !errors.Is(err, piece.ErrProviderNotFound) {
		t.Errorf("Payloads of another provider's piece: err = %v, want ErrProviderNotFound", err)
	}
	// A provider known only through its status has no pieces.
	text := "walking"
	if err := s.UpdateStatus(ctx(t), q, piece.StatusUpdate{Text: &text}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Payloads(ctx(t), q, pc); !errors.Is(err, piece.ErrPieceNotFound) {
		t.Errorf("Payloads of a status-only provider: err = %v, want ErrPieceNotFound", err)
	}
}

func testProvidersIsolated(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	p, q, pc := Provider(6), Provider(7), PieceCID(6)
	mustAdd(t, s, p, pc, Payloads(0, 10)...)
	mustAdd(t, s, q, pc, Payloads(100, 10)...)
	equal(t, "p", mustPayloads(t, s, p, pc), Expect(p, pc, Payloads(0, 10), 4))
	equal(t, "q", mustPayloads(t, s, q, pc), Expect(q, pc, Payloads(100, 10), 4))
	// The same payloads under two pieces are ranked independently.
	pc2 := PieceCID(7)
	mustAdd(t, s, p, pc2, Payloads(0, 10)...)
	equal(t, "p, second piece", mustPayloads(t, s, p, pc2), Expect(p, pc2, Payloads(0, 10), 4))
	if n := mustStatus(t, s, p).PiecesIndexed; n != 2 {
		t.Errorf("PiecesIndexed of p = %d, want 2", n)
	}
	if n := mustStatus(t, s, q).PiecesIndexed; n != 1 {
		t.Errorf("PiecesIndexed of q = %d, want 1", n)
	}
}

func ptr[T any](v T) *T { return &v }

func testStatus(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	p := Provider(8)
	h1, h2 := CID("head 1"), CID("head 2")
	u := piece.StatusUpdate{
		Add:     piece.Counters{AdsWalked: 3, AdsWithoutPiece: 1, EntriesUnretrievable: 2},
		Address: ptr("http://127.0.0.1:3104"), Text: ptr("walking"), LastError: ptr("fetch ad: timeout"),
		Head: &h1,
	}
	if err := s.UpdateStatus(ctx(t), p, u); err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, s, p)
	want := piece.Status{Provider: p, Address: "http://127.0.0.1:3104", Text: "walking", LastError: "fetch ad: timeout",
		Head: h1, Counters: piece.Counters{AdsWalked: 3, AdsWithoutPiece: 1, EntriesUnretrievable: 2}}
	check := func(what string, got, want piece.Status) {
		t.Helper()
		if got.Updated.IsZero() {
			t.Errorf("%s: Updated is zero", what)
		}
		got.Updated = time.Time{}
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
		}
	}
	check("after the first update", st, want)

	// Nil fields leave; counters add; "" clears LastError; Undef clears Head.
	if err := s.UpdateStatus(ctx(t), p, piece.StatusUpdate{
		Add: piece.Counters{AdsWalked: 10}, LastError: ptr(""), LastHead: &h2, Head: ptr(cid.Undef),
	}); err != nil {
		t.Fatal(err)
	}
	want.AdsWalked, want.LastError, want.LastHead, want.Head = 13, "", h2, cid.Undef
	check("after the second update", mustStatus(t, s, p), want)

	// Pieces are counted by AddPayloads and survive status updates.
	mustAdd(t, s, p, PieceCID(1), Payloads(0, 2)...)
	mustAdd(t, s, p, PieceCID(2), Payloads(0, 2)...)
	mustAdd(t, s, p, PieceCID(1), Payloads(5, 2)...)
	if err := s.UpdateStatus(ctx(t), p, piece.StatusUpdate{Text: ptr("up to date")}); err != nil {
		t.Fatal(err)
	}
	want.PiecesIndexed, want.Text = 2, "up to date"
	check("after pieces", mustStatus(t, s, p), want)

	// Strings that need escaping anywhere survive unchanged.
	odd := "unsupported protocol: \"libp2p\" \n\t✓ {x}"
	if err := s.UpdateStatus(ctx(t), p, piece.StatusUpdate{Text: &odd, Address: ptr("")}); err != nil {
		t.Fatal(err)
	}
	want.Text, want.Address = odd, ""
	check("after odd strings", mustStatus(t, s, p), want)
}

func testEmptyOffer(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	p, pc := Provider(9), PieceCID(9)
	mustAdd(t, s, p, pc)
	st := mustStatus(t, s, p) // the provider is known ...
	if st.PiecesIndexed != 0 {
		t.Errorf("PiecesIndexed after an empty offer = %d, want 0", st.PiecesIndexed)
	}
	if _, err := s.Payloads(ctx(t), p, pc); !errors.Is(err, piece.ErrPieceNotFound) { // ... the piece is not
		t.Errorf("Payloads after an empty offer: err = %v, want ErrPieceNotFound", err)
	}
}

func testInvalid(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	p, pc := Provider(10), PieceCID(10)
	if err := s.AddPayloads(ctx(t), "", pc, Payloads(0, 1)...); err == nil {
		t.Error("AddPayloads with an empty provider ID: no error")
	}
	if err := s.AddPayloads(ctx(t), p, cid.Undef, Payloads(0, 1)...); err == nil {
		t.Error("AddPayloads with an undefined piece: no error")
	}
	if err := s.AddPayloads(ctx(t), p, pc, CID("x"), cid.Undef); err == nil {
		t.Error("AddPayloads with an undefined payload: no error")
	}
	if _, err := s.Payloads(ctx(t), p, cid.Undef); err == nil {
		t.Error("Payloads with an undefined piece: no error")
	}
	if err := s.UpdateStatus(ctx(t), "", piece.StatusUpdate{}); err == nil {
		t.Error("UpdateStatus with an empty provider ID: no error")
	}
	if _, err := s.Status(ctx(t), p); !errors.Is(err, piece.ErrProviderNotFound) {
		t.Errorf("after rejected calls, Status: err = %v, want ErrProviderNotFound (nothing stored)", err)
	}
}

func testConcurrent(t *testing.T, newStore Factory) {
	s := newStore(t, 6)
	const workers, rounds = 8, 25
	providers := []peer.ID{Provider(20), Provider(21)}
	pieces := []cid.Cid{PieceCID(20), PieceCID(21), PieceCID(22)}
	var mu sync.Mutex
	offered := map[string][]cid.Cid{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				p, pc := providers[rng.IntN(2)], pieces[rng.IntN(3)]
				batch := Payloads(rng.IntN(100), 1+rng.IntN(5))
				if err := s.AddPayloads(context.Background(), p, pc, batch...); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				offered[string(p)+pc.KeyString()] = append(offered[string(p)+pc.KeyString()], batch...)
				mu.Unlock()
				if err := s.UpdateStatus(context.Background(), p, piece.StatusUpdate{Add: piece.Counters{AdsWalked: 1}, Text: ptr("walking")}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Payloads(context.Background(), p, pc); err != nil {
					errs <- err
					return
				}
				if _, err := s.Status(context.Background(), p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var walked int64
	for _, p := range providers {
		st := mustStatus(t, s, p)
		walked += st.AdsWalked
		var n int64
		for _, pc := range pieces {
			all := offered[string(p)+pc.KeyString()]
			if len(all) == 0 {
				continue
			}
			n++
			equal(t, fmt.Sprintf("Payloads(%s, %s)", p, pc), mustPayloads(t, s, p, pc), Expect(p, pc, all, 6))
		}
		if st.PiecesIndexed != n {
			t.Errorf("PiecesIndexed of %s = %d, want %d", p, st.PiecesIndexed, n)
		}
	}
	if walked != workers*rounds {
		t.Errorf("AdsWalked summed over providers = %d, want %d", walked, workers*rounds)
	}
}

func testClose(t *testing.T, newStore Factory) {
	s := newStore(t, 4)
	p, pc := Provider(30), PieceCID(30)
	mustAdd(t, s, p, pc, Payloads(0, 3)...)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.AddPayloads(ctx(t), p, pc, Payloads(0, 1)...); !errors.Is(err, piece.ErrClosed) {
		t.Errorf("AddPayloads after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Payloads(ctx(t), p, pc); !errors.Is(err, piece.ErrClosed) {
		t.Errorf("Payloads after Close: err = %v, want ErrClosed", err)
	}
	if err := s.UpdateStatus(ctx(t), p, piece.StatusUpdate{}); !errors.Is(err, piece.ErrClosed) {
		t.Errorf("UpdateStatus after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Status(ctx(t), p); !errors.Is(err, piece.ErrClosed) {
		t.Errorf("Status after Close: err = %v, want ErrClosed", err)
	}
}
