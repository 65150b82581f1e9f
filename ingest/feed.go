package ingest

import (
	"context"
	"errors"
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

// Sink returns an [announce.Sink] that hands each announce to
// [Ingester.AnnounceFrom] as it arrives (give it to the Receiver with
// announce.WithSink, instead of running [Ingester.Feed]), so that:
//
//   - the Receiver limits what an announce costs: a publisher with a walk
//     queued or running is only marked to be walked again
//     ([announce.ClassPending], no limit); a verified one is limited per
//     publisher, one that never verified per source address;
//   - an announce the Ingester has no room for is refused while its HTTP
//     request is open (429 when its source holds its fair share of the
//     publishers that never verified, 503 when everyone's share is
//     full), with a Retry-After, instead of being taken and dropped.
//
// The source of an HTTP announce is [SourceOf] its address (none when the
// Receiver trusts the address), of a gossip announce the peer that relayed
// it. accept, when not nil, is asked first for each announce's publisher,
// as by Feed.
func (ing *Ingester) Sink(accept func(context.Context, peer.ID) (bool, error)) announce.Sink {
	return ingesterSink{ing: ing, accept: accept}
}

type ingesterSink struct {
	ing    *Ingester
	accept func(context.Context, peer.ID) (bool, error)
}

func (s ingesterSink) Class(publisher peer.ID) announce.Class {
	i := s.ing
	i.mu.Lock()
	p := i.pubs[publisher]
	switch {
	case p != nil && (p.queued || p.walking):
		i.mu.Unlock()
		return announce.ClassPending
	case p != nil:
		verified := p.verified
		i.mu.Unlock()
		if verified {
			return announce.ClassVerified
		}
		return announce.ClassNew
	}
	i.mu.Unlock()
	// Not in memory: verified by an earlier process if it has addresses
	// persisted.
	if addrs, err := i.storedAddrs(context.Background(), publisher); err == nil && len(addrs) > 0 {
		return announce.ClassVerified
	}
	return announce.ClassNew
}

func (s ingesterSink) Take(a announce.Announce) error {
	i := s.ing
	if s.accept != nil {
		ok, err := s.accept(context.Background(), a.Publisher)
		if err != nil {
			i.log.Warn("announce: reading the policy", "publisher", a.Publisher.String(), "err", err)
		}
		if !ok {
			return fmt.Errorf("%w: %s", announce.ErrDenied, a.Publisher)
		}
	}
	var src string
	switch {
	case a.Source == announce.SourceGossip:
		src = "p2p/" + a.Relay.String()
	case !a.Trusted:
		src = SourceOf(a.From)
	}
	err := i.AnnounceFrom(src, a.Publisher, a.Addrs, a.Cid)
	var full *sourceFullError
	switch {
	case err == nil:
		i.log.Debug("announce", "publisher", a.Publisher.String(), "cid", a.Cid.String(), "source", a.Source.String())
		return nil
	case errors.As(err, &full):
		// Its own publishers make room as their checks end or expire.
		return &announce.Refusal{Reason: err.Error(), RetryAfter: i.cfg.unverifiedTTL / 10, Source: true}
	case errors.Is(err, ErrTooManyPublishers):
		return &announce.Refusal{Reason: err.Error(), RetryAfter: 2 * i.cfg.headCheckTimeout}
	case errors.Is(err, ErrNotAllowed):
		return fmt.Errorf("%w: %w", announce.ErrDenied, err)
	}
	return err
}
