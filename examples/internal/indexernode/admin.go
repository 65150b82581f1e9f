package indexernode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/assigner/admin"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/handoff"
)

// adminNode is the node as the admin API sees it: an [admin.Node] with the
// Freezer, Syncer and IngestReporter capabilities, over the ingester, the
// freezer and the handoff receiver.
type adminNode struct{ n *node }

var (
	_ admin.Node           = adminNode{}
	_ admin.Freezer        = adminNode{}
	_ admin.Syncer         = adminNode{}
	_ admin.IngestReporter = adminNode{}
)

// adminErr translates the handoff package's sentinels into the admin
// API's, keeping the original error in the chain for the log.
func adminErr(err error) error {
	for _, m := range []struct{ from, to error }{
		{handoff.ErrAlreadyAssigned, admin.ErrAlreadyAssigned},
		{handoff.ErrNotAssigned, admin.ErrNotAssigned},
		{handoff.ErrNotAllowed, admin.ErrNotAllowed},
		{handoff.ErrUnknownPublisher, admin.ErrUnknownPublisher},
		{handoff.ErrUnknownIndexer, admin.ErrUnknownIndexer},
		{handoff.ErrBadFrozenAt, admin.ErrBadFrozenAt},
		{handoff.ErrFrozen, admin.ErrFrozen},
		{handoff.ErrInvalidRequest, admin.ErrBadRequest},
		{freeze.ErrDisabled, admin.ErrDisabled},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w: %w", m.to, err)
		}
	}
	return err
}

func (a adminNode) assigner() error {
	if !a.n.cfg.UseAssigner {
		return admin.ErrNoAssigner
	}
	return nil
}

func (a adminNode) Assign(ctx context.Context, publisher peer.ID) error {
	if err := a.assigner(); err != nil {
		return err
	}
	return adminErr(a.n.hand.Assign(ctx, publisher))
}

func (a adminNode) Unassign(ctx context.Context, publisher peer.ID) error {
	if err := a.assigner(); err != nil {
		return err
	}
	return adminErr(a.n.hand.Unassign(ctx, publisher))
}

func (a adminNode) Assigned(ctx context.Context) ([]admin.Assignment, error) {
	if err := a.assigner(); err != nil {
		return nil, err
	}
	as, err := a.n.hand.Assignments(ctx)
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
// are not assigned.
func (a adminNode) Preferred(ctx context.Context) ([]peer.ID, error) {
	if err := a.assigner(); err != nil {
		return nil, err
	}
	var out []peer.ID
	for info, err := range a.n.st.Providers(ctx) {
		if err != nil {
			return nil, err
		}
		pub := info.Publisher.ID
		if pub == "" || slices.Contains(out, pub) {
			continue
		}
		_, ok, err := a.n.hand.Registry().Assigned(ctx, pub)
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

func (a adminNode) Handoff(ctx context.Context, publisher peer.ID, req admin.HandoffRequest) error {
	if err := a.assigner(); err != nil {
		return err
	}
	return adminErr(a.n.hand.Handoff(ctx, publisher, handoff.Request{FrozenID: req.FrozenID, FrozenURL: req.FrozenURL}))
}

func (a adminNode) Status(ctx context.Context) (admin.Status, error) {
	return admin.Status{Frozen: a.n.frozen(), ID: a.n.id, Usage: a.n.mon.Usage()}, nil
}

func (a adminNode) Freeze(ctx context.Context) error {
	_, err := a.n.fr.Freeze(ctx)
	return adminErr(err)
}

// Sync queues a walk of publisher to its current head (Depth and Resync
// are not supported: the walk goes down to the last processed ad).
func (a adminNode) Sync(ctx context.Context, publisher peer.ID, req admin.SyncRequest) error {
	if !a.n.allowed(publisher) {
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
	return a.n.ing.Announce(publisher, addrs, cid.Undef)
}

func (a adminNode) IngestStatus(ctx context.Context) ([]admin.PublisherStatus, error) {
	st := a.n.ing.Statuses()
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
