package handoff

import (
	"errors"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/internal/httperr"
)

// The sentinels of the package. Those a [Receiver] returns for a refused
// assignment or handoff are the admin contract's own (ErrAlreadyAssigned
// is admin.ErrAlreadyAssigned, ErrInvalidRequest is admin.ErrBadRequest,
// and so on): the admin API (ingest/admin) answers each as its wire
// contract says, with the status given here, and its Client returns the
// same value, so errors.Is holds end to end with no translation.
var (
	// ErrInvalidRequest is wrapped when a handoff [Request] is missing or
	// malformed: no body, bad JSON, an invalid FrozenID or FrozenURL. The
	// admin API answers it with 400, as the reference does for a missing
	// body.
	ErrInvalidRequest = admin.ErrBadRequest

	// ErrAlreadyAssigned is returned by [Receiver.Handoff] and
	// [Registry.Assign] for a publisher assigned to this indexer already
	// (or whose handoff is in progress here). 400, as the reference.
	ErrAlreadyAssigned = admin.ErrAlreadyAssigned

	// ErrNotAssigned is returned by [Registry.Unassign] for a publisher
	// that is not assigned. 404 "peer was not assigned", as the reference.
	ErrNotAssigned = admin.ErrNotAssigned

	// ErrFrozen is returned when this indexer is frozen ([WithFrozen]): a
	// frozen indexer takes no new publisher, by assignment or by handoff.
	// The reference refuses such an assignment with an empty 500 and does
	// not check a handoff at all; the admin API answers both with 500 and
	// a body naming the problem.
	ErrFrozen = admin.ErrFrozen

	// ErrNotAllowed is returned for a publisher the receiver's policy
	// ([WithAllowed]) rejects. 403.
	ErrNotAllowed = admin.ErrNotAllowed

	// ErrUnknownPublisher is returned by [Receiver.Handoff] when the frozen
	// indexer lists no provider record published by the publisher: there
	// is nothing to continue. The reference answers 200 without assigning
	// anything, which orphans the publisher; here nothing is assigned and
	// the caller learns why. 404.
	ErrUnknownPublisher = admin.ErrUnknownPublisher

	// ErrFrozenIndexer is wrapped when the frozen indexer's GET /providers
	// fails: a network error, an address the dial policy refuses
	// (netpolicy.ErrForbiddenAddress is wrapped too), a redirect
	// (netpolicy.ErrRedirect), a timeout (the context error is wrapped
	// too), or a status other than 200 and 204 (the message names it, not
	// the body). It matches admin.ErrUpstream too: 502 with the error's
	// text.
	ErrFrozenIndexer = upstream("handoff: frozen indexer unreachable or failing")

	// ErrInvalidProviders is wrapped when the frozen indexer's GET
	// /providers answer does not decode as the reference's JSON, or one
	// of the publisher's records is invalid (a bad peer ID, an oversize
	// context ID); the message says where, and quotes nothing of the
	// answer. It matches admin.ErrUpstream too: 502 with the error's text.
	ErrInvalidProviders = upstream("handoff: invalid providers answer from frozen indexer")

	// ErrTooLarge is wrapped when the frozen indexer's GET /providers
	// answer exceeds the body limit ([WithMaxBodySize]). It matches
	// admin.ErrUpstream too: 502 with the error's text.
	ErrTooLarge = upstream("handoff: providers answer from frozen indexer too large")

	// ErrUnknownIndexer is returned by [Receiver.Handoff] when the
	// request's FrozenURL is not one of the frozen indexers the receiver
	// accepts handoffs from ([WithFrozenIndexers]). Nothing is fetched
	// and nothing changes. The admin API answers 403.
	ErrUnknownIndexer = admin.ErrUnknownIndexer

	// ErrBadFrozenAt is wrapped by [Receiver.Handoff] when a FrozenAt of
	// the frozen indexer's records does not check out against the
	// publisher ([Ingest].CheckAd): the publisher does not serve it (404),
	// serves bytes that do not hash to it, it is no advertisement, its
	// signature is missing or by neither its provider nor the publisher,
	// or its provider is none of those the frozen indexer listed for the
	// publisher. Resetting the walk there could skip advertisements, so
	// nothing changes. The admin API answers 422.
	ErrBadFrozenAt = admin.ErrBadFrozenAt

	// ErrPublisherUnreachable is wrapped by [Receiver.Handoff] when a
	// FrozenAt cannot be checked because the publisher cannot be reached
	// (no address, a network error, a timeout). Nothing changes; the
	// assigner tries again later. It matches admin.ErrUpstream too: 502
	// with the error's text.
	ErrPublisherUnreachable = upstream("handoff: publisher unreachable to check FrozenAt")

	// ErrInvalidOption is wrapped by constructors given an argument or an
	// option they cannot honour; the message names it.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "handoff: invalid option")

	// ErrSnapshotUnsettled is returned by [Snapshot] when provider records
	// keep changing over every pass.
	ErrSnapshotUnsettled = errors.New("handoff: freeze snapshot: provider records keep changing")
)

// StatusError is the error of the frozen indexer's GET /providers
// answered with a status other than 200 and 204, wrapped under
// [ErrFrozenIndexer]: the one status error type of every indexkit HTTP
// client (admin.StatusError, ipnisync.StatusError and find.StatusError
// are the same type). It does not carry the answer's body, which goes to
// the debug log only.
type StatusError = httperr.StatusError

// upstreamError is a sentinel of a handoff that failed because a server it
// depends on failed (the frozen indexer, the publisher): errors.Is matches
// it and admin.ErrUpstream, which the admin API answers 502.
type upstreamError struct{ msg string }

func upstream(msg string) error { return &upstreamError{msg} }

func (e *upstreamError) Error() string { return e.msg }
func (e *upstreamError) Unwrap() error { return admin.ErrUpstream }
