package handoff

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/store"
)

// NodeConfig are the parts of an indexer a [Node] answers the admin API
// over. ID, Store, Ingester and Receiver are required.
type NodeConfig struct {
	// ID is the indexer's peer ID, reported by GET /status.
	ID peer.ID
	// Store holds the provider records: Preferred lists their publishers,
	// the freeze snapshot and the unfreeze resume read and write them.
	Store store.ProviderRecords
	// Ingester walks the publishers: Sync queues a walk, IngestStatus
	// reports its per-publisher status, an unfreeze resumes through it.
	Ingester *ingest.Ingester
	// Receiver holds the assignments and takes handoffs.
	Receiver *Receiver
	// Freezer is the node's freezer; nil: the node never freezes (PUT
	// /freeze answers freeze.ErrDisabled, Status says not frozen).
	Freezer *freeze.Freezer
	// Usage reports the disk usage in percent, −1 when unknown (a
	// [freeze.Monitor]'s Usage); nil: always −1.
	Usage func() float64
	// UseAssigner makes the node ingest only the publishers assigned to
	// it: announces and syncs of others are refused ([Node.Accepts]).
	// Without it the assignment routes answer admin.ErrNoAssigner.
	UseAssigner bool
}

// Node is an indexer's side of the assigner's admin contract, built from
// indexkit's parts: an [admin.Node] with the [admin.Freezer],
// [admin.Syncer] and [admin.IngestReporter] capabilities, served by
// admin.NewHandler. Assignments and handoffs go to the [Receiver]; Status
// and Freeze to the [freeze.Freezer]; Sync and IngestStatus to the
// [ingest.Ingester]. It also gives the announce intake its policy
// ([Node.Accepts]) and lists the publishers to poll ([Node.Following]).
// The freezer's callbacks are [Snapshot] and [Unfreeze].
//
// The errors it returns are the admin contract's sentinels, which this
// package shares (ErrAlreadyAssigned is admin.ErrAlreadyAssigned, and so
// on; freeze.ErrDisabled is admin.ErrDisabled): no table translates them,
// and errors.Is works on both sides of the wire. A Node is safe for
// concurrent use.
type Node struct{ cfg NodeConfig }

var (
	_ admin.Node           = (*Node)(nil)
	_ admin.Freezer        = (*Node)(nil)
	_ admin.Syncer         = (*Node)(nil)
	_ admin.IngestReporter = (*Node)(nil)
)

// NewNode returns the Node over cfg's parts. It fails, wrapping
// [ErrInvalidOption], when a required part is missing.
func NewNode(cfg NodeConfig) (*Node, error) {
	switch {
	case cfg.ID == "":
		return nil, fmt.Errorf("%w: NodeConfig.ID is empty", ErrInvalidOption)
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: NodeConfig.Store is nil", ErrInvalidOption)
	case cfg.Ingester == nil:
		return nil, fmt.Errorf("%w: NodeConfig.Ingester is nil", ErrInvalidOption)
	case cfg.Receiver == nil:
		return nil, fmt.Errorf("%w: NodeConfig.Receiver is nil", ErrInvalidOption)
	}
	return &Node{cfg: cfg}, nil
}

func (n *Node) assigner() error {
	if !n.cfg.UseAssigner {
		return admin.ErrNoAssigner
	}
	return nil
}

// Frozen reports whether the node is frozen: it takes no new publishers.
// It is the receiver's [WithFrozen] function.
func (n *Node) Frozen() bool { return n.cfg.Freezer != nil && n.cfg.Freezer.Frozen() }

// Accepts reports whether the node takes announces and syncs of
// publisher: every publisher, or with UseAssigner the assigned ones. It
// is the announce receiver's allow function. A registry that cannot be
// read refuses (the error is returned for the log).
func (n *Node) Accepts(ctx context.Context, publisher peer.ID) (bool, error) {
	if !n.cfg.UseAssigner {
		return true, nil
	}
	_, ok, err := n.cfg.Receiver.Registry().Assigned(ctx, publisher)
	return ok, err
}

// Assign is admin.Node's Assign: [Receiver.Assign].
func (n *Node) Assign(ctx context.Context, publisher peer.ID) error {
	if err := n.assigner(); err != nil {
		return err
	}
	return n.cfg.Receiver.Assign(ctx, publisher)
}

// Unassign is admin.Node's Unassign: [Receiver.Unassign].
func (n *Node) Unassign(ctx context.Context, publisher peer.ID) error {
	if err := n.assigner(); err != nil {
		return err
	}
	return n.cfg.Receiver.Unassign(ctx, publisher)
}

// Assigned is admin.Node's Assigned: [Receiver.Assignments].
func (n *Node) Assigned(ctx context.Context) ([]admin.Assignment, error) {
	if err := n.assigner(); err != nil {
		return nil, err
	}
	as, err := n.cfg.Receiver.Assignments(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]admin.Assignment, len(as))
	for i, x := range as {
		out[i] = admin.Assignment{Publisher: x.Publisher, Continued: x.Continued}
	}
	return out, nil
}

// Preferred lists the publishers of the provider records held here that
// are not assigned, sorted.
func (n *Node) Preferred(ctx context.Context) ([]peer.ID, error) {
	if err := n.assigner(); err != nil {
		return nil, err
	}
	var out []peer.ID
	for info, err := range n.cfg.Store.Providers(ctx) {
		if err != nil {
			return nil, err
		}
		pub := info.Publisher.ID
		if pub == "" || slices.Contains(out, pub) {
			continue
		}
		_, ok, err := n.cfg.Receiver.Registry().Assigned(ctx, pub)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, pub)
		}
	}
	slices.SortFunc(out, func(x, y peer.ID) int { return strings.Compare(string(x), string(y)) })
	return out, nil
}

// Handoff is admin.Node's Handoff: [Receiver.Handoff].
func (n *Node) Handoff(ctx context.Context, publisher peer.ID, req admin.HandoffRequest) error {
	if err := n.assigner(); err != nil {
		return err
	}
	return n.cfg.Receiver.Handoff(ctx, publisher, Request{FrozenID: req.FrozenID, FrozenURL: req.FrozenURL})
}

// Status reports whether the node is frozen, its ID and its disk usage.
func (n *Node) Status(context.Context) (admin.Status, error) {
	usage := -1.0
	if n.cfg.Usage != nil {
		usage = n.cfg.Usage()
	}
	return admin.Status{Frozen: n.Frozen(), ID: n.cfg.ID, Usage: usage}, nil
}

// Freeze freezes the node ([freeze.Freezer.Freeze]); freeze.ErrDisabled
// (admin.ErrDisabled) without a Freezer or when freezing is disabled.
func (n *Node) Freeze(ctx context.Context) error {
	if n.cfg.Freezer == nil {
		return freeze.ErrDisabled
	}
	_, err := n.cfg.Freezer.Freeze(ctx)
	return err
}

// Sync queues a walk of publisher to its current head, from req.Addr when
// set (Depth and Resync are not supported: the walk goes down to the last
// processed ad). With UseAssigner, an unassigned publisher is
// admin.ErrNotAllowed.
func (n *Node) Sync(ctx context.Context, publisher peer.ID, req admin.SyncRequest) error {
	ok, err := n.Accepts(ctx, publisher)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s is not assigned", admin.ErrNotAllowed, publisher)
	}
	var addrs []multiaddr.Multiaddr
	if req.Addr != nil {
		addr, id := peer.SplitAddr(req.Addr)
		if id != "" && id != publisher {
			return fmt.Errorf("%w: address %s is not of publisher %s", admin.ErrBadRequest, req.Addr, publisher)
		}
		addrs = append(addrs, addr)
	}
	return n.cfg.Ingester.Announce(publisher, addrs, cid.Undef)
}

// IngestStatus reports the ingester's status of every publisher.
func (n *Node) IngestStatus(context.Context) ([]admin.PublisherStatus, error) {
	st := n.cfg.Ingester.Statuses()
	out := make([]admin.PublisherStatus, len(st))
	for i, s := range st {
		out[i] = admin.PublisherStatus{
			Publisher: s.Publisher, Addrs: s.Addrs, Announced: s.Announced, Head: s.Head, LastHead: s.LastHead,
			Pending: s.Pending, Walking: s.Walking, AdsWalked: s.AdsWalked, AdsApplied: s.AdsApplied,
			EntriesIndexed: s.EntriesIndexed, Failures: s.Failures, RetryAt: s.RetryAt, LastErrorTime: s.LastErrorTime,
		}
		if s.LastError != nil {
			out[i].LastError = s.LastError.Error()
		}
	}
	return out, nil
}

// Following lists the publishers the node follows: with UseAssigner its
// assignments (frozen or not: a frozen node still applies removals and
// metadata updates), otherwise the publishers of its provider records.
// A node asks each of them for its head at start and at every poll
// (a publisher whose head has not moved costs one head request).
func (n *Node) Following(ctx context.Context) ([]peer.ID, error) {
	var pubs []peer.ID
	if n.cfg.UseAssigner {
		as, err := n.cfg.Receiver.Registry().Assignments(ctx)
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			pubs = append(pubs, a.Publisher)
		}
		return pubs, nil
	}
	for info, err := range n.cfg.Store.Providers(ctx) {
		if err != nil {
			return nil, err
		}
		if id := info.Publisher.ID; id != "" && !slices.Contains(pubs, id) {
			pubs = append(pubs, id)
		}
	}
	return pubs, nil
}

// Unfreeze is what an indexer does when it unfreezes (the freezer's
// WithOnUnfreeze callback), the counterpart of [Snapshot]: it resets each
// publisher's walk to its providers' FrozenAt as a handoff does
// ([ResumePoints], [Resume]), so that the advertisements walked while
// frozen are applied again with their entries; it then clears FrozenAt
// (LastAdvertisement = FrozenAt) and queues a walk of each publisher (a
// walk that cannot be queued is logged: the next poll or announce starts
// it).
func Unfreeze(ctx context.Context, st store.ProviderRecords, ing *ingest.Ingester, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	byPub := make(map[peer.ID][]store.ProviderInfo)
	addrs := make(map[peer.ID][]multiaddr.Multiaddr)
	var records []store.ProviderInfo
	for info, err := range st.Providers(ctx) {
		if err != nil {
			return fmt.Errorf("unfreeze: %w", err)
		}
		if !info.FrozenAt.Defined() {
			continue
		}
		records = append(records, info)
		pub := info.Publisher.ID
		if pub == "" {
			continue
		}
		byPub[pub] = append(byPub[pub], info)
		if len(info.Publisher.Addrs) > 0 {
			addrs[pub] = info.Publisher.Addrs
		}
	}
	adapter := FromIngester(ing)
	for pub, recs := range byPub {
		points, _ := ResumePoints(recs)
		if err := Resume(ctx, adapter, pub, points); err != nil {
			return fmt.Errorf("unfreeze: %w", err)
		}
		log.Info("unfreeze: publisher resumes from its frozen point", "publisher", pub.String(), "cid", points[len(points)-1].String())
	}
	for _, info := range records {
		info.LastAdvertisement = info.FrozenAt
		info.FrozenAt, info.FrozenAtTime = cid.Undef, time.Time{}
		if err := st.PutProvider(ctx, info); err != nil {
			return fmt.Errorf("unfreeze: %w", err)
		}
	}
	for pub := range byPub {
		if err := ing.Announce(pub, addrs[pub], cid.Undef); err != nil {
			log.Warn("unfreeze: cannot queue a walk", "publisher", pub.String(), "err", err)
		}
	}
	return nil
}
