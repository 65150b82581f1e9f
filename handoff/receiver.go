package handoff

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
)

// Ingest is what a [Receiver] needs of the node's ingestion. [FromIngester]
// adapts an [*ingest.Ingester].
type Ingest interface {
	// Reset sets publisher's walk so that ingestion continues right after
	// lastHead: lastHead and everything before it count as applied, and
	// any walk in progress is dropped. A handoff may call it more than
	// once for one publisher (once per distinct FrozenAt of its
	// providers, the one to resume from last); each call must keep the
	// applied markers of the earlier ones, as [ingest.Walker.Reset] does,
	// so that the next walk stops at the first of them it meets.
	Reset(ctx context.Context, publisher peer.ID, lastHead cid.Cid) error
	// Announce asks for a walk of publisher, reachable at addrs, up to
	// head (cid.Undef: ask the publisher for its head), as
	// [ingest.Ingester.Announce].
	Announce(publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error
	// CheckAd fetches the advertisement ad from publisher, reachable at
	// addrs (empty: the addresses ingestion knows), and returns it once
	// its hash and its signature (by its provider or by publisher) are
	// checked, as [ingest.Ingester.CheckAd]; it changes nothing. Errors
	// wrap [ingest.ErrFetch] when the block cannot be fetched (with
	// ipnisync.ErrNotFound when the publisher answered 404),
	// [ingest.ErrInvalidBlock] or [ingest.ErrSignature] when it does not
	// check out.
	CheckAd(ctx context.Context, publisher peer.ID, addrs []multiaddr.Multiaddr, ad cid.Cid) (*schema.Advertisement, error)
}

// FromIngester adapts ing to [Ingest]: Reset resets the publisher's
// [ingest.Walker], Announce is [ingest.Ingester.Announce], CheckAd is
// [ingest.Ingester.CheckAd].
func FromIngester(ing *ingest.Ingester) Ingest { return ingesterAdapter{ing} }

type ingesterAdapter struct{ ing *ingest.Ingester }

func (a ingesterAdapter) Reset(ctx context.Context, publisher peer.ID, lastHead cid.Cid) error {
	w, err := a.ing.Walker(publisher)
	if err != nil {
		return err
	}
	return w.Reset(ctx, lastHead)
}

func (a ingesterAdapter) Announce(publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	return a.ing.Announce(publisher, addrs, head)
}

func (a ingesterAdapter) CheckAd(ctx context.Context, publisher peer.ID, addrs []multiaddr.Multiaddr, ad cid.Cid) (*schema.Advertisement, error) {
	return a.ing.CheckAd(ctx, publisher, addrs, ad)
}

// Receiver takes publishers over from frozen indexers ([Receiver.Handoff])
// and holds this indexer's assignments: it is what the admin API's
// assign, unassign, assigned and handoff endpoints call. See the package
// documentation. A Receiver is safe for concurrent use.
type Receiver struct {
	st  store.ProviderRecords
	ing Ingest
	reg *Registry
	cfg *config
	log *slog.Logger
}

// NewReceiver returns a Receiver that registers providers in st, resumes
// ingestion through ing and records assignments in reg. It starts
// nothing.
func NewReceiver(st store.ProviderRecords, ing Ingest, reg *Registry, opts ...Option) (*Receiver, error) {
	switch {
	case st == nil:
		return nil, fmt.Errorf("%w: nil provider records", ErrInvalidOption)
	case ing == nil:
		return nil, fmt.Errorf("%w: nil Ingest", ErrInvalidOption)
	case reg == nil:
		return nil, fmt.Errorf("%w: nil Registry", ErrInvalidOption)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Receiver{st: st, ing: ing, reg: reg, cfg: cfg, log: cfg.log}, nil
}

// Registry returns the receiver's assignment registry.
func (r *Receiver) Registry() *Registry { return r.reg }

// check refuses any new publisher on a frozen receiver, and publishers
// the policy denies.
func (r *Receiver) check(publisher peer.ID) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("%w: publisher: %v", ErrInvalidRequest, err)
	}
	if r.cfg.frozen() {
		return fmt.Errorf("%w: cannot take publisher %s", ErrFrozen, publisher)
	}
	if !r.cfg.allowed(publisher) {
		return fmt.Errorf("%w: %s", ErrNotAllowed, publisher)
	}
	return nil
}

// Assign assigns publisher to this indexer (POST /ingest/assign/{id}):
// [ErrFrozen] when frozen, [ErrNotAllowed] when the policy denies it,
// [ErrAlreadyAssigned] when assigned already; otherwise it is persisted.
// The assigner then announces the publisher's head to the node.
func (r *Receiver) Assign(ctx context.Context, publisher peer.ID) error {
	if err := r.check(publisher); err != nil {
		return err
	}
	return r.reg.Assign(ctx, publisher)
}

// Unassign is [Registry.Unassign] (PUT /ingest/unassign/{id}).
func (r *Receiver) Unassign(ctx context.Context, publisher peer.ID) error {
	return r.reg.Unassign(ctx, publisher)
}

// Assignments is [Registry.Assignments] (GET /ingest/assigned).
func (r *Receiver) Assignments(ctx context.Context) ([]Assignment, error) {
	return r.reg.Assignments(ctx)
}

// Handoff takes publisher over from the frozen indexer req names, so that
// ingestion continues here with the advertisement right after the last
// one the frozen indexer processed (POST /ingest/handoff/{id}):
//
//  1. It refuses a frozen receiver ([ErrFrozen]), a denied publisher
//     ([ErrNotAllowed]), an invalid req ([ErrInvalidRequest]), a
//     FrozenURL that is not among the accepted frozen indexers
//     ([ErrUnknownIndexer], see [WithFrozenIndexers]) and a publisher
//     assigned here already or being handed off ([ErrAlreadyAssigned]).
//     No request has been made then.
//  2. It GETs {FrozenURL}/providers and keeps every record whose
//     Publisher.ID is publisher: all of its providers, where the
//     reference takes the first. None is [ErrUnknownPublisher]; a failing
//     or malformed answer is [ErrFrozenIndexer], [ErrInvalidProviders] or
//     [ErrTooLarge]. Nothing has changed here then.
//  3. It checks each distinct FrozenAt of those records against the
//     publisher ([Ingest].CheckAd, at the publisher addresses step 7
//     announces): it must be an advertisement the publisher serves, whose
//     hash and signature check out, and whose provider is one of the
//     records' providers. One that does not is [ErrBadFrozenAt]; one that
//     cannot be fetched for another reason (the publisher is down) is
//     [ErrPublisherUnreachable]. Nothing has changed here then either.
//  4. It registers each provider in the store: AddrInfo, Publisher and
//     ExtendedProviders replace those of any record here; the rest of
//     that record (LastAdvertisement, LastError, ...) stays.
//  5. It resets the publisher's walk to the FrozenAt of its providers
//     (see "Where ingestion resumes" in the package documentation). With
//     no FrozenAt (the frozen indexer never froze them), the walk is left
//     as it is: the next walk ingests the whole chain, as the reference
//     does; this is logged at WARN.
//  6. It persists the assignment with Continued = req.FrozenID.
//  7. It announces the publisher to ingestion with head cid.Undef (ask
//     the publisher) and the publisher addresses of the frozen records.
//     A failed announce is logged, not returned: the handoff is complete,
//     and the publisher's next announce starts the walk.
//
// Steps 4 to 6 are idempotent and persisted in that order, so a handoff
// interrupted before 6 is simply done again.
func (r *Receiver) Handoff(ctx context.Context, publisher peer.ID, req Request) error {
	if err := r.check(publisher); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	url, _ := req.providersURL() // validated
	if err := r.checkFrozenIndexer(ctx, req); err != nil {
		return err
	}
	if err := r.reg.reserve(ctx, publisher); err != nil {
		return err
	}
	defer r.reg.release(publisher)
	log := r.log.With("publisher", publisher.String(), "indexer", req.FrozenID.String())

	recs, err := fetchProviders(ctx, r.cfg.hc, log, url, publisher, r.cfg.maxBody)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("%w: %s lists no provider published by %s", ErrUnknownPublisher, url, publisher)
	}

	resets, chosen := resumePoints(recs)
	addrs := publisherAddrs(recs, chosen)
	for _, c := range resets {
		if err := r.checkFrozenAt(ctx, publisher, addrs, recs, c); err != nil {
			log.Warn("handoff refused: FrozenAt not verified against the publisher", "cid", c.String(), "err", err)
			return err
		}
	}

	for _, rec := range recs {
		if err := r.register(ctx, rec.info); err != nil {
			return err
		}
	}
	if err := Resume(ctx, r.ing, publisher, resets); err != nil {
		return err
	}
	switch {
	case !chosen.frozenAt.Defined():
		log.Warn("handoff: the frozen indexer's records have no FrozenAt; the whole chain will be ingested",
			"providers", len(recs))
	case len(resets) > 1:
		log.Warn("handoff: providers of one publisher have different FrozenAt; ingestion resumes after the newest of them in the chain",
			"cid", chosen.frozenAt.String(), "frozenAts", len(resets))
	}

	if err := r.reg.commit(ctx, publisher, req.FrozenID); err != nil {
		return err
	}
	log.Info("handoff: publisher taken over", "providers", len(recs), "cid", chosen.frozenAt.String())

	if err := r.ing.Announce(publisher, addrs, cid.Undef); err != nil {
		log.Warn("handoff: announce after handoff failed; the publisher's next announce starts the walk", "err", err)
	}
	return nil
}

// checkFrozenAt checks that c, a FrozenAt of recs, is an advertisement
// the publisher serves and signed (or its provider did), of one of the
// providers recs lists. See step 3 of [Receiver.Handoff].
func (r *Receiver) checkFrozenAt(ctx context.Context, publisher peer.ID, addrs []multiaddr.Multiaddr, recs []frozenRecord, c cid.Cid) error {
	ad, err := r.ing.CheckAd(ctx, publisher, addrs, c)
	switch {
	case err == nil:
	case errors.Is(err, ingest.ErrInvalidBlock), errors.Is(err, ingest.ErrSignature),
		errors.Is(err, ipnisync.ErrNotFound), errors.Is(err, ipnisync.ErrHashMismatch):
		// The publisher answered, and the answer says no.
		return fmt.Errorf("%w: %s: %s: %w", ErrBadFrozenAt, publisher, c, err)
	default:
		return fmt.Errorf("%w: %s: %s: %w", ErrPublisherUnreachable, publisher, c, withCtxErr(ctx, err))
	}
	provider, err := peer.Decode(ad.Provider)
	if err != nil {
		return fmt.Errorf("%w: %s: %s: provider %q: %v", ErrBadFrozenAt, publisher, c, ad.Provider, err)
	}
	if !slices.ContainsFunc(recs, func(rec frozenRecord) bool { return rec.info.AddrInfo.ID == provider }) {
		return fmt.Errorf("%w: %s: %s is an advertisement of provider %s, which the frozen indexer does not list for the publisher",
			ErrBadFrozenAt, publisher, c, provider)
	}
	return nil
}

// register writes the frozen indexer's record of a provider into the
// store, keeping this indexer's own ingestion fields of any record here.
func (r *Receiver) register(ctx context.Context, from store.ProviderInfo) error {
	id := from.AddrInfo.ID
	info, err := r.st.Provider(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		info = store.ProviderInfo{}
	case err != nil:
		return fmt.Errorf("handoff: read provider %s: %w", id, err)
	}
	info.AddrInfo = from.AddrInfo
	info.Publisher = from.Publisher
	info.ExtendedProviders = from.ExtendedProviders
	if err := r.st.PutProvider(ctx, info); err != nil {
		return fmt.Errorf("handoff: register provider %s: %w", id, err)
	}
	return nil
}

// resumePoints is [ResumePoints] over the frozen indexer's records, with
// the record chosen (the first when none has a FrozenAt).
func resumePoints(recs []frozenRecord) (resets []cid.Cid, chosen frozenRecord) {
	infos := make([]store.ProviderInfo, len(recs))
	for i, rec := range recs {
		infos[i] = store.ProviderInfo{FrozenAt: rec.frozenAt, FrozenAtTime: rec.frozenAtTime}
	}
	resets, best := ResumePoints(infos)
	if best < 0 {
		return nil, recs[0]
	}
	return resets, recs[best]
}

// publisherAddrs returns the publisher addresses to announce: those of the
// chosen record, else the first record that lists some.
func publisherAddrs(recs []frozenRecord, chosen frozenRecord) []multiaddr.Multiaddr {
	if len(chosen.info.Publisher.Addrs) > 0 {
		return chosen.info.Publisher.Addrs
	}
	for _, rec := range recs {
		if len(rec.info.Publisher.Addrs) > 0 {
			return rec.info.Publisher.Addrs
		}
	}
	return nil
}
