package errkind_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	leasememory "github.com/indexkit/indexkit/lease/memory"
	"github.com/indexkit/indexkit/piece"
	piecememory "github.com/indexkit/indexkit/piece/memory"
	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace/writer"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/scatter/web"
	"github.com/indexkit/indexkit/store"
	storememory "github.com/indexkit/indexkit/store/memory"
)

// sentinels are the exported sentinels of every library package, by kind.
// TestSentinelsOfTheModule checks that this list is complete.
var sentinels = map[errkind.Kind]map[string]error{
	errkind.InvalidOption: {
		"admin.ErrInvalidOption":     admin.ErrInvalidOption,
		"announce.ErrInvalidOption":  announce.ErrInvalidOption,
		"assigner.ErrInvalidConfig":  assigner.ErrInvalidConfig,
		"assigner.ErrInvalidOption":  assigner.ErrInvalidOption,
		"chaingen.ErrInvalidConfig":  chaingen.ErrInvalidConfig,
		"find.ErrInvalidOption":      find.ErrInvalidOption,
		"freeze.ErrInvalidOption":    freeze.ErrInvalidOption,
		"handoff.ErrInvalidOption":   handoff.ErrInvalidOption,
		"ingest.ErrInvalidOption":    ingest.ErrInvalidOption,
		"lease.ErrInvalidOption":     lease.ErrInvalidOption,
		"netlimit.ErrInvalidOption":  netlimit.ErrInvalidOption,
		"netpolicy.ErrInvalidOption": netpolicy.ErrInvalidOption,
		"outbox.ErrInvalidOption":    outbox.ErrInvalidOption,
		"piece.ErrInvalidOption":     piece.ErrInvalidOption,
		"querynode.ErrInvalidConfig": querynode.ErrInvalidConfig,
		"routing.ErrInvalidOption":   routing.ErrInvalidOption,
		"sample.ErrInvalidOption":    sample.ErrInvalidOption,
		"scatter.ErrInvalidOption":   scatter.ErrInvalidOption,
		"web.ErrInvalidOption":       web.ErrInvalidOption,
		"writer.ErrInvalidConfig":    writer.ErrInvalidConfig,
	},
	errkind.Closed: {
		"announce.ErrClosed":  announce.ErrClosed,
		"lease.ErrClosed":     lease.ErrClosed,
		"outbox.ErrClosed":    outbox.ErrClosed,
		"piece.ErrClosed":     piece.ErrClosed,
		"querynode.ErrClosed": querynode.ErrClosed,
		"store.ErrClosed":     store.ErrClosed,
	},
	errkind.RunTwice: {
		"agent.ErrRunTwice":     agent.ErrRunTwice,
		"announce.ErrRunTwice":  announce.ErrRunTwice,
		"assigner.ErrRunTwice":  assigner.ErrRunTwice,
		"freeze.ErrRunTwice":    freeze.ErrRunTwice,
		"querynode.ErrRunTwice": querynode.ErrRunTwice,
	},
}

// TestKindsMatchAcrossPackages makes real errors of each kind in several
// packages (bad options, use after Close, a second Run) and checks that
// each matches, under errors.Is, the sentinel of its kind of every package,
// and no sentinel of another kind. A package that declares its own
// sentinel with errors.New fails here: its errors no longer match the
// others' sentinels.
func TestKindsMatchAcrossPackages(t *testing.T) {
	ctx := context.Background()
	ds := dssync.MutexWrap(datastore.NewMapDatastore())
	errs := map[errkind.Kind]map[string]error{
		errkind.InvalidOption: {},
		errkind.Closed:        {},
		errkind.RunTwice:      {},
	}
	got := func(k errkind.Kind, what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error, want one of kind %v", what, k)
		}
		errs[k][what] = err
	}

	// Invalid options.
	_, err := ingest.New(storememory.New(), ds, nil, ingest.WithBatchSize(-1))
	got(errkind.InvalidOption, "ingest.New(WithBatchSize(-1))", err)
	_, err = scatter.NewGather(nil, scatter.WithBackendTimeout(-time.Second))
	got(errkind.InvalidOption, "scatter.NewGather(WithBackendTimeout(-1s))", err)
	_, err = leasememory.New(lease.WithTTL(0))
	got(errkind.InvalidOption, "lease/memory.New(WithTTL(0))", err)
	_, err = agent.NewManager(nil, "node")
	got(errkind.InvalidOption, "agent.NewManager(nil store)", err)
	_, err = piece.NewTracker(nil, ds)
	got(errkind.InvalidOption, "piece.NewTracker(nil store)", err)
	_, err = freeze.NewMonitor(nil, freeze.WithPollIntervals(-time.Second, time.Second))
	got(errkind.InvalidOption, "freeze.NewMonitor(WithPollIntervals(-1s, 1s))", err)
	_, err = outbox.Open(t.TempDir(), outbox.WithSegmentSize(-1))
	got(errkind.InvalidOption, "outbox.Open(WithSegmentSize(-1))", err)
	_, err = querynode.New(querynode.Config{}, keyspace.Layout{})
	got(errkind.InvalidOption, "querynode.New(Config{})", err)

	// Use after Close.
	st := storememory.New()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	mh, err := multihash.Sum([]byte("a key"), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Get(ctx, mh)
	got(errkind.Closed, "store/memory: Get after Close", err)
	ls, err := leasememory.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ls.Get(ctx, "item")
	got(errkind.Closed, "lease/memory: Get after Close", err)
	ps, err := piecememory.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ps.Status(ctx, peer.ID("provider"))
	got(errkind.Closed, "piece/memory: Status after Close", err)
	recv, err := announce.NewReceiver()
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = recv.Next(ctx)
	got(errkind.Closed, "announce: Receiver.Next after Close", err)
	ob, err := outbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ob.Append("dest", 1, []byte("payload"))
	got(errkind.Closed, "outbox: Append after Close", err)

	// A second Run.
	m, err := agent.NewManager(ls2(t), "node", agent.WithIndexer(noIndexer{}))
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Run(done); err != nil {
		t.Fatalf("agent: first Run: %v", err)
	}
	got(errkind.RunTwice, "agent: second Manager.Run", m.Run(done))
	svc, err := assigner.NewService(assigner.ServiceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Run(done); err != nil {
		t.Fatalf("assigner: first Run: %v", err)
	}
	got(errkind.RunTwice, "assigner: second Service.Run", svc.Run(done))

	for k, byWhat := range errs {
		for what, err := range byWhat {
			if gk, ok := errkind.Of(err); !ok || gk != k {
				t.Errorf("%s: %v: errkind.Of = %v, %v; want %v", what, err, gk, ok, k)
			}
			for sk, byName := range sentinels {
				for name, s := range byName {
					if is := errors.Is(err, s); is != (sk == k) {
						t.Errorf("%s: %v: errors.Is(err, %s) = %v, want %v", what, err, name, is, sk == k)
					}
				}
			}
		}
	}
}

// TestSentinelsMatch checks the sentinels among themselves: each matches
// every sentinel of its kind, none of another kind, and keeps a message
// of its own that names its package.
func TestSentinelsMatch(t *testing.T) {
	msgs := map[string]string{}
	for k, byName := range sentinels {
		for name, s := range byName {
			if prev, dup := msgs[s.Error()]; dup {
				t.Errorf("%s and %s share the message %q", name, prev, s.Error())
			}
			msgs[s.Error()] = name
			for k2, byName2 := range sentinels {
				for name2, s2 := range byName2 {
					if is := errors.Is(fmt.Errorf("wrapped: %w", s), s2); is != (k == k2) {
						t.Errorf("errors.Is(%s, %s) = %v, want %v", name, name2, is, k == k2)
					}
				}
			}
		}
	}
	if !errors.Is(lease.ErrInvalidOption, lease.ErrInvalid) {
		t.Error("lease.ErrInvalidOption does not match lease.ErrInvalid")
	}
	if !errors.Is(agent.ErrRunTwice, lease.ErrInvalid) {
		t.Error("agent.ErrRunTwice does not match lease.ErrInvalid")
	}
	if !errors.Is(announce.ErrRunTwice, announce.ErrNotRunning) {
		t.Error("announce.ErrRunTwice does not match announce.ErrNotRunning")
	}
}

func ls2(t *testing.T) lease.Store {
	s, err := leasememory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// noIndexer indexes nothing; the manager never wins an item here.
type noIndexer struct{}

func (noIndexer) Index(context.Context, lease.Row) (int64, error) { return 0, nil }
func (noIndexer) Drop(string)                                     {}
