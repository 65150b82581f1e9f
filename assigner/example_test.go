package assigner_test

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/assigner"
)

// A service drives the state: it polls every indexer at startup, feeds
// announces in, carries the decisions out over the indexers' admin APIs
// and reports each result. Here indexer a freezes holding three
// publishers; each is handed off to its own best candidate, and one
// refused handoff moves to the next candidate without disturbing the
// others.
func Example() {
	var (
		pubA = mustDecode("12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq")
		pubB = mustDecode("12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5")
		pubC = mustDecode("12D3KooWRndVhVZPCiQwHBBBdg769GyrPUW13zxwqQyf9r3ANaba")
		pubD = mustDecode("12D3KooWPT98FXMfDQYavZm66EeVjTqP9Nnehn1gyaydqV8L8BQw")
		idA  = mustDecode("12D3KooWHFd1gyNYFqxt7ke9FY2VoVVWY2XSPhvL9vg2pB6wQGfa")
		idB  = mustDecode("12D3KooWRawPbxPtP1eZaJpumGnyWX2DcUyd3RQnydr3eAto4Az7")
		idC  = mustDecode("12D3KooWB8sCGZCrwr79HtabLAn95qyPQx6RYHXjEbiD6QKou7ww")
	)
	names := map[peer.ID]string{pubA: "A", pubB: "B", pubC: "C", pubD: "D"}
	show := func(ds []assigner.Decision) {
		for _, d := range ds {
			switch d.Kind {
			case assigner.KindAssign:
				fmt.Printf("assign %s to %s\n", names[d.Publisher], d.Indexer)
			case assigner.KindHandoff:
				fmt.Printf("handoff %s from %s to %s\n", names[d.Publisher], d.From, d.Indexer)
			case assigner.KindRetryLater:
				fmt.Printf("retry %s later: %s\n", names[d.Publisher], d.Reason)
			}
		}
	}

	// README: assigner
	s, err := assigner.NewState(assigner.Config{
		Indexers: []assigner.IndexerConfig{{ID: "a"}, {ID: "b"}, {ID: "c"}},
	})
	if err != nil {
		panic(err)
	}

	// Until every indexer is polled, one may hold the publisher.
	show(s.Announce(pubD))

	// The startup rebuild: GET /status, /ingest/assigned, /ingest/preferred.
	held := []assigner.Assignment{{Publisher: pubA}, {Publisher: pubB}, {Publisher: pubC}}
	show(must(s.Polled("a", assigner.IndexerStatus{ID: idA, Assigned: held})))
	show(must(s.Polled("b", assigner.IndexerStatus{ID: idB})))
	show(must(s.Polled("c", assigner.IndexerStatus{ID: idC})))
	show(s.AssignResult("b", pubD, assigner.Done))

	// A later poll finds a frozen: one handoff per publisher, spread.
	show(must(s.Polled("a", assigner.IndexerStatus{ID: idA, Frozen: true, Assigned: held})))
	show(s.HandoffResult("a", "c", pubA, assigner.Done))
	show(s.HandoffResult("a", "b", pubB, assigner.Refused)) // b froze meanwhile
	show(s.HandoffResult("a", "c", pubB, assigner.Done))
	show(s.HandoffResult("a", "c", pubC, assigner.Done))
	// README end

	for _, ix := range s.Snapshot().Indexers {
		fmt.Printf("%s: frozen %v, %d assigned\n", ix.ID, ix.Frozen, len(ix.Assigned))
	}
	// Output:
	// retry D later: assignments-unknown
	// assign D to b
	// handoff A from a to c
	// handoff B from a to b
	// handoff C from a to c
	// handoff B from a to c
	// a: frozen true, 3 assigned
	// b: frozen false, 1 assigned
	// c: frozen false, 3 assigned
}

func mustDecode(s string) peer.ID {
	id, err := peer.Decode(s)
	if err != nil {
		panic(err)
	}
	return id
}

func must(ds []assigner.Decision, err error) []assigner.Decision {
	if err != nil {
		panic(err)
	}
	return ds
}
