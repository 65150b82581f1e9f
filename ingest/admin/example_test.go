package admin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/libp2p/go-libp2p/core/peer"
)

// memNode is a minimal Node: a set of assigned publishers behind a mutex.
// A real indexer adapts its ingester, freezer and handoff receiver.
type memNode struct {
	id       peer.ID
	mu       sync.Mutex
	assigned map[peer.ID]peer.ID // publisher → continued frozen node
}

func (n *memNode) Assign(_ context.Context, p peer.ID) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.assigned[p]; ok {
		return admin.ErrAlreadyAssigned
	}
	n.assigned[p] = ""
	return nil
}

func (n *memNode) Unassign(_ context.Context, p peer.ID) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.assigned[p]; !ok {
		return admin.ErrNotAssigned
	}
	delete(n.assigned, p)
	return nil
}

func (n *memNode) Assigned(context.Context) ([]admin.Assignment, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var list []admin.Assignment
	for p, c := range n.assigned {
		list = append(list, admin.Assignment{Publisher: p, Continued: c})
	}
	return list, nil
}

func (n *memNode) Preferred(context.Context) ([]peer.ID, error) { return nil, nil }

func (n *memNode) Handoff(_ context.Context, p peer.ID, req admin.HandoffRequest) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.assigned[p]; ok {
		return admin.ErrAlreadyAssigned
	}
	n.assigned[p] = req.FrozenID // a real node first imports the frozen node's providers
	return nil
}

func (n *memNode) Status(context.Context) (admin.Status, error) {
	return admin.Status{ID: n.id, Usage: 42.5}, nil
}

// The assigner's view of one indexer: rebuild its state, assign a
// publisher, see a refusal come back as the same sentinel.
func Example() {
	// A fixed ID for the example; a node uses its libp2p identity.
	self, _ := peer.Decode("12D3KooWBUNzpAz1Jfvnaag1nHBi6gbG5Q1BQm8kCfcpmt7bGKa6")
	publisher, _ := peer.Decode("QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N")
	node := &memNode{id: self, assigned: map[peer.ID]peer.ID{}}

	// The indexer serves the handler (on admin.DefaultListenAddr in a
	// binary; on a test listener here), with a bearer token.
	h, err := admin.NewHandler(node, admin.WithToken("s3cret"))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	client, err := admin.NewClient(srv.URL, admin.WithClientToken("s3cret"))
	if err != nil {
		fmt.Println(err)
		return
	}

	assigned, _ := client.Assigned(ctx) // 204: none yet
	status, _ := client.Status(ctx)
	fmt.Println("assigned:", len(assigned), "frozen:", status.Frozen, "usage:", status.Usage)

	if err := client.Assign(ctx, publisher); err != nil {
		fmt.Println(err)
		return
	}
	assigned, _ = client.Assigned(ctx)
	fmt.Println("assigned:", assigned[0].Publisher == publisher)

	err = client.Assign(ctx, publisher)
	var se *admin.StatusError
	errors.As(err, &se)
	fmt.Println("again:", errors.Is(err, admin.ErrAlreadyAssigned), se.Code, se.Body)

	err = client.Freeze(ctx) // memNode is no admin.Freezer
	fmt.Println("freeze:", errors.Is(err, admin.ErrNotSupported))
	// Output:
	// assigned: 0 frozen: false usage: 42.5
	// assigned: true
	// again: true 400 publisher already assigned to this indexer
	// freeze: true
}
