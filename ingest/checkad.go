package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/schema"
)

// CheckAd fetches the advertisement ad from publisher and checks it as a
// walk checks the advertisements it collects, without walking, applying
// or recording anything: the block must hash to ad (ingest/schema checks
// it, as the ipnisync client does), decode as an advertisement, and carry
// a signature by its provider or by publisher (or none, with
// [WithUnsignedAds]). A handoff uses it to check, before it resets the
// walk there, that the FrozenAt a frozen indexer reports is an
// advertisement the publisher serves and signed.
//
// The publisher is reached through a Syncer made by the Ingester's
// [SyncerFunc] from addrs or, when addrs is empty, from the addresses
// persisted by an earlier walk of publisher; the request has the
// Ingester's request timeout ([WithRequestTimeout]). The Syncer is made
// for this call and closed after it (when it is an io.Closer): the
// publisher's walks keep theirs.
//
// Errors wrap [ErrFetch] when the Syncer cannot be made or the block
// cannot be fetched (the Syncer's own error too, so an ipnisync 404 is
// errors.Is ipnisync.ErrNotFound), [ErrInvalidBlock] (and the
// ingest/schema sentinel) when the block is not a valid advertisement
// under ad, and [ErrSignature] when its signature is missing, wrong, or by
// another peer.
func (i *Ingester) CheckAd(ctx context.Context, publisher peer.ID, addrs []multiaddr.Multiaddr, ad cid.Cid) (*schema.Advertisement, error) {
	if err := publisher.Validate(); err != nil {
		return nil, fmt.Errorf("ingest: check ad: %w: publisher: %v", ErrInvalidOption, err)
	}
	if !ad.Defined() {
		return nil, fmt.Errorf("ingest: check ad of %s: %w: undefined CID", publisher, ErrInvalidBlock)
	}
	if len(addrs) == 0 {
		stored, err := i.storedAddrs(ctx, publisher)
		if err != nil {
			return nil, err
		}
		addrs = stored
	}
	raw, err := i.newSyncer(publisher, addrs)
	if err != nil {
		return nil, fmt.Errorf("ingest: check ad %s: %w: syncer for %s: %w", ad, ErrFetch, publisher, err)
	}
	if c, ok := raw.(io.Closer); ok {
		defer c.Close()
	}
	block, err := newLimitedSyncer(raw, &i.cfg.walkerConfig).Block(ctx, ad) // wraps ErrFetch
	if err != nil {
		return nil, fmt.Errorf("ingest: check ad of %s: %w", publisher, err)
	}
	got, err := schema.DecodeAdvertisement(ad, block)
	if err != nil {
		return nil, fmt.Errorf("ingest: check ad %s of %s: %w: %w", ad, publisher, ErrInvalidBlock, err)
	}
	provider, _ := peer.Decode(got.Provider) // validated by DecodeAdvertisement
	if _, err := checkSigner(got, provider, publisher, i.cfg.allowUnsigned); err != nil {
		return nil, fmt.Errorf("ingest: check ad %s of %s: %w", ad, publisher, err)
	}
	return got, nil
}

// checkSigner is the signature policy of a walk (Walker.verify) and of
// CheckAd: the signer must be the provider or the publisher; unsigned only
// when allowUnsigned.
func checkSigner(ad *schema.Advertisement, provider, publisher peer.ID, allowUnsigned bool) (peer.ID, error) {
	signer, err := ad.VerifySignature()
	switch {
	case errors.Is(err, schema.ErrNoSignature) && allowUnsigned:
		return "", nil
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrSignature, err)
	case signer != provider && signer != publisher:
		return "", fmt.Errorf("%w: signed by %s, which is neither the provider nor the publisher %s", ErrSignature, signer, publisher)
	}
	return signer, nil
}
