package handoff_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// handoffFixture is a frozen indexer holding three providers of one
// publisher (two FrozenAt, at two times) and two unrelated records.
type handoffFixture struct {
	pub, other, frozenID peer.ID
	provA, provB, provC  peer.ID
	unrelated, orphan    peer.ID
	newer, older         cid.Cid // FrozenAt of A and C, of B
	pubAddrs             []string
	recs                 []refProvider
	extA                 *refExtended
}

func newFixture(t testing.TB) *handoffFixture {
	f := &handoffFixture{
		pub: peerID(t, "publisher"), other: peerID(t, "other publisher"), frozenID: peerID(t, "frozen indexer"),
		provA: peerID(t, "A"), provB: peerID(t, "B"), provC: peerID(t, "C"),
		unrelated: peerID(t, "unrelated"), orphan: peerID(t, "orphan"),
		newer: adCID(t, "ad 9"), older: adCID(t, "ad 5"),
		pubAddrs: []string{"/ip4/10.0.0.3/tcp/3002/http"},
	}
	pubInfo := &peer.AddrInfo{ID: f.pub, Addrs: maddrs(f.pubAddrs...)}
	f.extA = &refExtended{
		Providers: []peer.AddrInfo{{ID: f.provA, Addrs: maddrs("/ip4/10.0.0.1/tcp/1")}, {ID: peerID(t, "x1"), Addrs: maddrs("/ip4/10.0.0.11/tcp/1")}},
		Metadatas: [][]byte{[]byte("md-a"), nil},
		Contextual: []refContextual{{
			Override: true, ContextID: "ctx-1",
			Providers: []peer.AddrInfo{{ID: peerID(t, "x2"), Addrs: maddrs("/ip4/10.0.0.12/tcp/1")}},
			Metadatas: [][]byte{[]byte("md-x2")},
		}},
	}
	t9 := "2024-05-06T06:08:09Z"
	f.recs = []refProvider{
		{ // unrelated publisher, never frozen: null CIDs
			AddrInfo:  peer.AddrInfo{ID: f.unrelated, Addrs: maddrs("/ip4/10.0.0.20/tcp/1")},
			Publisher: &peer.AddrInfo{ID: f.other, Addrs: maddrs("/ip4/10.0.0.21/tcp/1")},
		},
		{ // B's last ad is older in the chain: its FrozenAt is older
			AddrInfo:          peer.AddrInfo{ID: f.provB, Addrs: maddrs("/ip4/10.0.0.2/tcp/1")},
			LastAdvertisement: f.older, LastAdvertisementTime: "2024-05-06T05:00:00Z",
			Publisher: pubInfo, FrozenAt: f.older, FrozenAtTime: "2024-05-06T05:00:00Z",
		},
		{
			AddrInfo:          peer.AddrInfo{ID: f.provA, Addrs: maddrs("/ip4/10.0.0.1/tcp/1")},
			LastAdvertisement: adCID(t, "ad 12"), LastAdvertisementTime: "2024-05-06T07:00:00Z",
			Publisher: pubInfo, ExtendedProviders: f.extA,
			FrozenAt: f.newer, FrozenAtTime: t9,
			LastError: "fetching entries: timeout", LastErrorTime: "2024-05-06T07:08:09Z",
		},
		{ // no publisher at all
			AddrInfo: peer.AddrInfo{ID: f.orphan, Addrs: maddrs("/ip4/10.0.0.30/tcp/1")},
		},
		{
			AddrInfo:  peer.AddrInfo{ID: f.provC, Addrs: maddrs("/ip4/10.0.0.4/tcp/1")},
			Publisher: pubInfo, FrozenAt: f.newer, FrozenAtTime: t9,
		},
	}
	return f
}

func TestHandoff(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	st := memory.New()
	defer st.Close()
	// The receiver already knows A from earlier ingestion: its own
	// ingestion fields stay.
	own := adCID(t, "receiver's own ad")
	if err := st.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: f.provA}, LastAdvertisement: own}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ds := openLevelDB(t, dir)
	ing := f.ingest()
	r := newReceiver(t, st, ing, ds)

	if err := r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}); err != nil {
		t.Fatal(err)
	}

	// Every provider of the publisher is registered, the others are not.
	for _, id := range []peer.ID{f.provA, f.provB, f.provC} {
		info, err := st.Provider(ctx, id)
		if err != nil {
			t.Fatalf("provider %s: %v", id, err)
		}
		if info.Publisher.ID != f.pub || len(info.Publisher.Addrs) != 1 || info.Publisher.Addrs[0].String() != f.pubAddrs[0] {
			t.Errorf("provider %s: publisher %v", id, info.Publisher)
		}
		if len(info.AddrInfo.Addrs) != 1 {
			t.Errorf("provider %s: addrs %v", id, info.AddrInfo.Addrs)
		}
		if info.FrozenAt.Defined() || info.LastError != "" {
			t.Errorf("provider %s: frozen indexer's ingestion fields copied: %+v", id, info)
		}
		switch id {
		case f.provA:
			if !info.LastAdvertisement.Equals(own) {
				t.Errorf("A: LastAdvertisement %s, want the receiver's own %s", info.LastAdvertisement, own)
			}
			x := info.ExtendedProviders
			if x == nil || len(x.Providers) != 2 || !bytes.Equal(x.Metadatas[0], []byte("md-a")) || x.Metadatas[1] != nil ||
				len(x.Contextual) != 1 || !x.Contextual[0].Override || string(x.Contextual[0].ContextID) != "ctx-1" ||
				!bytes.Equal(x.Contextual[0].Metadatas[0], []byte("md-x2")) {
				t.Errorf("A: extended providers %+v", x)
			}
		default:
			if info.LastAdvertisement.Defined() {
				t.Errorf("provider %s: LastAdvertisement copied", id)
			}
		}
	}
	for _, id := range []peer.ID{f.unrelated, f.orphan} {
		if _, err := st.Provider(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("provider %s of another publisher registered: %v", id, err)
		}
	}

	// Every distinct FrozenAt is marked, the one to resume from last.
	resets, anns := ing.calls()
	if len(resets) != 2 || !resets[0].Equals(f.older) || !resets[1].Equals(f.newer) {
		t.Errorf("resets %v, want [%s %s]", resets, f.older, f.newer)
	}
	if len(anns) != 1 || anns[0].publisher != f.pub || anns[0].head.Defined() ||
		len(anns[0].addrs) != 1 || anns[0].addrs[0].String() != f.pubAddrs[0] {
		t.Errorf("announces %+v, want one of the publisher with head Undef", anns)
	}

	want := []handoff.Assignment{{Publisher: f.pub, Continued: f.frozenID}}
	checkAssignments(t, r.Registry(), want)

	// Continued survives a restart.
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := newReceiver(t, st, &fakeIngest{}, openLevelDB(t, dir))
	checkAssignments(t, r2.Registry(), want)
	if err := r2.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}); !errors.Is(err, handoff.ErrAlreadyAssigned) {
		t.Errorf("second handoff after restart: %v, want ErrAlreadyAssigned", err)
	}
}

func checkAssignments(t *testing.T, reg *handoff.Registry, want []handoff.Assignment) {
	t.Helper()
	got, err := reg.Assignments(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("assignments %v, want %v", got, want)
	}
}

// TestHandoffRefused covers every refusal: nothing may change, and the
// frozen indexer is asked only when the receiver could take the publisher.
func TestHandoffRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tests := []struct {
		name    string
		opts    []handoff.Option
		prepare func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request
		pub     peer.ID
		want    error
		asked   bool // the frozen indexer was asked
	}{{
		name: "unknown publisher", pub: peerID(t, "stranger"), want: handoff.ErrUnknownPublisher, asked: true,
	}, {
		name: "already assigned", pub: f.pub, want: handoff.ErrAlreadyAssigned,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			if err := r.Assign(ctx, f.pub); err != nil {
				t.Fatal(err)
			}
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}, {
		name: "frozen receiver", pub: f.pub, want: handoff.ErrFrozen,
		opts: []handoff.Option{handoff.WithFrozen(func() bool { return true })},
	}, {
		name: "not allowed", pub: f.pub, want: handoff.ErrNotAllowed,
		opts: []handoff.Option{handoff.WithAllowed(func(p peer.ID) bool { return p != f.pub })},
	}, {
		name: "no FrozenID", pub: f.pub, want: handoff.ErrInvalidRequest,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			return handoff.Request{FrozenURL: node.URL}
		},
	}, {
		name: "bad FrozenURL", pub: f.pub, want: handoff.ErrInvalidRequest,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: "ftp://host/x"}
		},
	}, {
		name: "frozen indexer answers 500", pub: f.pub, want: handoff.ErrFrozenIndexer, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			node.set(http.StatusInternalServerError, []byte("datastore closed"))
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}, {
		name: "frozen indexer answers 404", pub: f.pub, want: handoff.ErrFrozenIndexer, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL + "/wrong"}
		},
	}, {
		name: "malformed JSON", pub: f.pub, want: handoff.ErrInvalidProviders, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			node.set(http.StatusOK, []byte(`[{"AddrInfo":{"ID":`))
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}, {
		name: "not an array", pub: f.pub, want: handoff.ErrInvalidProviders, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			node.set(http.StatusOK, []byte(`{"AddrInfo":{}}`))
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}, {
		name: "invalid record of the publisher", pub: f.pub, want: handoff.ErrInvalidProviders, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			node.set(http.StatusOK, fmt.Appendf(nil, `[{"AddrInfo":{"ID":"","Addrs":[]},"Publisher":{"ID":%q,"Addrs":[]},"FrozenAt":null}]`, f.pub))
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}, {
		name: "answer too large", pub: f.pub, want: handoff.ErrTooLarge, asked: true,
		opts: []handoff.Option{handoff.WithMaxBodySize(100)},
	}, {
		name: "empty list", pub: f.pub, want: handoff.ErrUnknownPublisher, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			node.set(http.StatusOK, []byte(`[]`))
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}, {
		name: "null", pub: f.pub, want: handoff.ErrUnknownPublisher, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			node.set(http.StatusOK, []byte(`null`))
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}, {
		name: "204", pub: f.pub, want: handoff.ErrUnknownPublisher, asked: true,
		prepare: func(t *testing.T, r *handoff.Receiver, node *frozenNode) handoff.Request {
			node.set(http.StatusNoContent, nil)
			return handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := newFrozenNode(t, f.recs...)
			st := memory.New()
			defer st.Close()
			ing := f.ingest()
			r := newReceiver(t, st, ing, newMapDS(), tt.opts...)
			req := handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
			var before []handoff.Assignment
			if tt.prepare != nil {
				req = tt.prepare(t, r, node)
				var err error
				if before, err = r.Assignments(ctx); err != nil {
					t.Fatal(err)
				}
			}
			err := r.Handoff(ctx, tt.pub, req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Handoff: %v, want %v", err, tt.want)
			}
			if asked := node.requests.Load() > 0; asked != tt.asked {
				t.Errorf("frozen indexer asked: %v, want %v", asked, tt.asked)
			}
			checkAssignments(t, r.Registry(), before)
			if resets, anns := ing.calls(); len(resets)+len(anns) > 0 {
				t.Errorf("ingestion touched: resets %v, announces %v", resets, anns)
			}
			n := 0
			for _, err := range st.Providers(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != 0 {
				t.Errorf("%d provider records registered", n)
			}
		})
	}
}

// TestHandoffRetryAfterFailure: a failed handoff leaves the publisher free.
func TestHandoffRetryAfterFailure(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	node.set(http.StatusServiceUnavailable, []byte("busy"))
	st := memory.New()
	defer st.Close()
	r := newReceiver(t, st, f.ingest(), newMapDS())
	req := handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
	if err := r.Handoff(ctx, f.pub, req); !errors.Is(err, handoff.ErrFrozenIndexer) {
		t.Fatalf("first handoff: %v", err)
	}
	node.setJSON(t, f.recs)
	if err := r.Handoff(ctx, f.pub, req); err != nil {
		t.Fatalf("retry: %v", err)
	}
	checkAssignments(t, r.Registry(), []handoff.Assignment{{Publisher: f.pub, Continued: f.frozenID}})
}

// TestHandoffNoFrozenAt: records never frozen are still taken over; the
// walk is left alone (the whole chain is ingested) and a WARN says so.
func TestHandoffNoFrozenAt(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	recs := slices.Clone(f.recs)
	for i := range recs {
		recs[i].FrozenAt, recs[i].FrozenAtTime = cid.Undef, ""
	}
	node := newFrozenNode(t, recs...)
	st := memory.New()
	defer st.Close()
	ing := &fakeIngest{}
	var logs logBuffer
	r := newReceiver(t, st, ing, newMapDS(), handoff.WithLogger(logs.logger()))
	if err := r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}); err != nil {
		t.Fatal(err)
	}
	resets, anns := ing.calls()
	if len(resets) != 0 || len(anns) != 1 {
		t.Errorf("resets %v, announces %v: want no reset and one announce", resets, anns)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "whole chain") {
		t.Errorf("no WARN about the whole chain:\n%s", logs.String())
	}
	checkAssignments(t, r.Registry(), []handoff.Assignment{{Publisher: f.pub, Continued: f.frozenID}})
}

// TestHandoffAnnounceFails: the handoff is complete once persisted; a
// failed announce is logged.
func TestHandoffAnnounceFails(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	st := memory.New()
	defer st.Close()
	var logs logBuffer
	ing := f.ingest()
	ing.err = errors.New("queue closed")
	r := newReceiver(t, st, ing, newMapDS(), handoff.WithLogger(logs.logger()))
	if err := r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "queue closed") {
		t.Errorf("announce failure not logged:\n%s", logs.String())
	}
}

// TestHandoffStreamsUnrelatedRecords: a record of another publisher that
// does not decode in full (a bad multiaddr) does not fail the handoff; a
// publisher ID in CIDv1 form matches; FrozenURL may carry a path prefix
// and no scheme.
func TestHandoffStreamsUnrelatedRecords(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var paths []string
	var mu sync.Mutex
	body := fmt.Sprintf(`[
 {"AddrInfo":{"ID":%q,"Addrs":["not a multiaddr"]},"Publisher":{"ID":%q,"Addrs":[]},"LastAdvertisement":null,"FrozenAt":null},
 {"AddrInfo":{"ID":%q,"Addrs":[]},"Publisher":{"ID":%q,"Addrs":["/ip4/1.2.3.4/tcp/5"]},"LastAdvertisement":null,"FrozenAt":{"/":%q},"FrozenAtTime":"2024-05-06T06:08:09.123456789Z","NewField":[1,2]}
]`, f.unrelated, f.other, f.provA, peer.ToCid(f.pub).String(), f.newer)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	st := memory.New()
	defer st.Close()
	ing := f.ingest()
	r := newReceiver(t, st, ing, newMapDS())
	url := strings.TrimPrefix(srv.URL, "http://") + "/indexer-1/"
	if err := r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: url}); err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 || paths[0] != "/indexer-1/providers" {
		t.Errorf("paths %v, want [/indexer-1/providers]", paths)
	}
	if resets, _ := ing.calls(); len(resets) != 1 || !resets[0].Equals(f.newer) {
		t.Errorf("resets %v", resets)
	}
}

// TestHandoffConcurrent: of two handoffs of one publisher at once, one
// wins and the other is refused while the first is in progress; a plain
// assignment is refused too.
func TestHandoffConcurrent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		<-release
		node.Config.Handler.ServeHTTP(w, r)
	}))
	defer gate.Close()
	st := memory.New()
	defer st.Close()
	r := newReceiver(t, st, f.ingest(), newMapDS())
	req := handoff.Request{FrozenID: f.frozenID, FrozenURL: gate.URL}
	first := make(chan error)
	go func() { first <- r.Handoff(ctx, f.pub, req) }()
	<-entered
	if err := r.Handoff(ctx, f.pub, req); !errors.Is(err, handoff.ErrAlreadyAssigned) {
		t.Errorf("concurrent handoff: %v, want ErrAlreadyAssigned", err)
	}
	if err := r.Assign(ctx, f.pub); !errors.Is(err, handoff.ErrAlreadyAssigned) {
		t.Errorf("assign during handoff: %v, want ErrAlreadyAssigned", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	checkAssignments(t, r.Registry(), []handoff.Assignment{{Publisher: f.pub, Continued: f.frozenID}})
}

// TestHandoffTimeout: a frozen indexer that never answers is bounded by
// ctx.
func TestHandoffTimeout(t *testing.T) {
	f := newFixture(t)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer srv.Close()
	defer close(hang)
	st := memory.New()
	defer st.Close()
	r := newReceiver(t, st, &fakeIngest{}, newMapDS())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: srv.URL})
	if !errors.Is(err, handoff.ErrFrozenIndexer) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Handoff: %v, want ErrFrozenIndexer and DeadlineExceeded", err)
	}
}

// TestHandoffScatterGolden decodes the record our own find API serves
// (scatter's golden file, a record in the reference's shape).
func TestHandoffScatterGolden(t *testing.T) {
	golden, err := readFile("../scatter/find/testdata/provider_info_full.json")
	if err != nil {
		t.Fatalf("scatter golden file: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "[%s]", golden)
	}))
	defer srv.Close()
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	pub, _ := peer.Decode("12D3KooWPRXeNcj4Actyumz9X8sfYu37GJJknrRptJ57XdMFZTtW")
	prov, _ := peer.Decode("12D3KooWPbG5TQ3LgDP41D6mB2b6AG5mq5psePiK2GDpmK99rTbe")
	frozenAt, _ := cid.Decode("baguqeeraetk4qkajkg7t7nhqvzxp6lljc6ea3bcws2ml6c2yduacsd7nb27a")
	ing := &fakeIngest{ads: map[cid.Cid]peer.ID{frozenAt: prov}}
	r := newReceiver(t, st, ing, newMapDS())
	if err := r.Handoff(ctx, pub, handoff.Request{FrozenID: peerID(t, "frozen"), FrozenURL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	info, err := st.Provider(ctx, prov)
	if err != nil {
		t.Fatal(err)
	}
	x := info.ExtendedProviders
	if x == nil || len(x.Providers) != 2 || len(x.Contextual) != 1 || string(x.Contextual[0].ContextID) != "ctx-a" {
		t.Errorf("extended providers %+v", x)
	}
	if resets, _ := ing.calls(); len(resets) != 1 || !resets[0].Equals(frozenAt) {
		t.Errorf("resets %v, want [%s]", resets, frozenAt)
	}
}

func TestNewReceiverInvalid(t *testing.T) {
	reg, err := handoff.NewRegistry(newMapDS())
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	defer st.Close()
	for name, fn := range map[string]func() error{
		"nil store":    func() error { _, err := handoff.NewReceiver(nil, &fakeIngest{}, reg); return err },
		"nil ingest":   func() error { _, err := handoff.NewReceiver(st, nil, reg); return err },
		"nil registry": func() error { _, err := handoff.NewReceiver(st, &fakeIngest{}, nil); return err },
		"nil client": func() error {
			_, err := handoff.NewReceiver(st, &fakeIngest{}, reg, handoff.WithHTTPClient(nil))
			return err
		},
		"zero body": func() error {
			_, err := handoff.NewReceiver(st, &fakeIngest{}, reg, handoff.WithMaxBodySize(0))
			return err
		},
		"nil frozen": func() error {
			_, err := handoff.NewReceiver(st, &fakeIngest{}, reg, handoff.WithFrozen(nil))
			return err
		},
		"nil datastore": func() error { _, err := handoff.NewRegistry(nil); return err },
	} {
		if err := fn(); !errors.Is(err, handoff.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}
