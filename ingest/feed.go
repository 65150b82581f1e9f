package ingest

import (
	"context"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/announce"
)

// AnnounceSource is where [Ingester.Feed] reads announces from: an
// [*announce.Receiver], which takes them over HTTP and gossip.
type AnnounceSource interface {
	// Next blocks until an announce arrives or ctx ends.
	Next(ctx context.Context) (announce.Announce, error)
	// Forget lets a later announce of (publisher, c) through again.
	Forget(publisher peer.ID, c cid.Cid)
}

// Feed hands every announce src yields to [Ingester.Announce] until ctx
// ends, then returns nil; it returns an error only when src fails (a
// closed receiver). accept, when not nil, is asked first for each
// announce's publisher (a policy may change after the receiver let the
// announce through, such as an assignment withdrawn): an announce it
// refuses, or that it cannot answer for (its error is logged), is dropped.
// An announce the ingester refuses (a full queue of unverified
// publishers, a publisher denied) is logged and forgotten by src, so that
// the publisher's next announce of the same head is not taken for a
// repeat.
func (ing *Ingester) Feed(ctx context.Context, src AnnounceSource, accept func(context.Context, peer.ID) (bool, error)) error {
	for {
		a, err := src.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("announces: %w", err)
		}
		if accept != nil {
			ok, err := accept(ctx, a.Publisher)
			if err != nil {
				ing.log.Warn("announce: reading the policy", "publisher", a.Publisher.String(), "err", err)
			}
			if !ok {
				continue
			}
		}
		if err := ing.Announce(a.Publisher, a.Addrs, a.Cid); err != nil {
			ing.log.Warn("announce refused", "publisher", a.Publisher.String(), "cid", a.Cid.String(), "err", err)
			src.Forget(a.Publisher, a.Cid)
			continue
		}
		ing.log.Debug("announce", "publisher", a.Publisher.String(), "cid", a.Cid.String(), "source", a.Source.String())
	}
}
