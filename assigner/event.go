package assigner

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Assignment is one publisher an indexer is assigned, as GET
// /ingest/assigned lists it (the same fields as admin.Assignment, so one
// converts to the other).
type Assignment struct {
	Publisher peer.ID
	// Continued is the peer ID of the frozen indexer this assignment took
	// over by a handoff; empty otherwise.
	Continued peer.ID `json:",omitempty"`
}

// IndexerStatus is what polling an indexer found: GET /status (ID,
// Frozen), GET /ingest/assigned and GET /ingest/preferred. It is the
// whole truth about the indexer's assignments at the time of the poll:
// [State.Polled] replaces what the state knew.
type IndexerStatus struct {
	// ID is the indexer's peer ID, the one receivers of its handoffs
	// report as Continued. It is required.
	ID     peer.ID
	Frozen bool
	// Assigned lists the indexer's assigned publishers.
	Assigned []Assignment
	// Preferred lists the publishers the indexer holds data for without
	// being assigned them; they prefer it. Ignored when Frozen.
	Preferred []peer.ID
}

// Outcome is the result of an assign or handoff request, reported by
// [State.AssignResult] and [State.HandoffResult].
type Outcome int

const (
	// Done: the indexer took the publisher (admin API 200).
	Done Outcome = iota
	// AlreadyHeld: the indexer already had the publisher (400
	// admin.ErrAlreadyAssigned). The state records it as held.
	AlreadyHeld
	// Refused: the indexer refused and will until its status changes
	// (admin.ErrFrozen, ErrNotAllowed, ErrNoAssigner; for a handoff
	// ErrUnknownIndexer: it does not accept the frozen indexer, which only
	// its configuration changes). The state does not
	// propose the publisher to it again until a poll shows a different
	// status, it comes back online, or it is re-added.
	Refused
	// Failed: the request failed and may or may not have taken effect
	// (timeout, transport error, 5xx, admin.ErrUnavailable). Until the
	// indexer's next poll the state counts it as perhaps holding the
	// publisher, so nothing is over-assigned.
	Failed
	// NoSource: handoff only: the frozen indexer has nothing for the
	// publisher (admin.ErrUnknownPublisher). The state stops handing the
	// publisher off from it and assigns it afresh instead, until the
	// frozen indexer's status changes.
	NoSource
)

var outcomeNames = [...]string{"done", "already-held", "refused", "failed", "no-source"}

func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Kind is the kind of a [Decision].
type Kind string

const (
	// KindAssign asks the caller to assign Publisher to Indexer (POST
	// /ingest/assign/{publisher}) and report [State.AssignResult].
	KindAssign Kind = "assign"
	// KindHandoff asks the caller to hand Publisher off from the frozen
	// indexer From (peer ID FrozenID) to Indexer (POST
	// /ingest/handoff/{publisher}) and report [State.HandoffResult].
	KindHandoff Kind = "handoff"
	// KindRetryLater reports that Publisher is short of its replication
	// and why ([Reason]). It asks for nothing: the state remembers the
	// publisher and proposes more when an event makes it possible. It is
	// emitted when the reason changes and on every announce of a waiting
	// publisher.
	KindRetryLater Kind = "retry-later"
)

// Reason says why a publisher waits ([KindRetryLater]). When several
// apply, the first of this list is given.
type Reason string

const (
	// ReasonNoCandidate: no indexer can take the publisher (all are
	// frozen, offline, holding it, refusing it, outside its preset list,
	// or the pool is smaller than the replication).
	ReasonNoCandidate Reason = "no-candidate"
	// ReasonSourceOffline: the publisher must be handed off from a frozen
	// indexer that is offline; the state waits for it rather than
	// re-ingest the publisher from the start elsewhere.
	ReasonSourceOffline Reason = "frozen-source-offline"
	// ReasonUnknown: an indexer whose assignments are unknown (never
	// polled, or a request to it failed since its last poll) may hold the
	// publisher, so assigning more could over-assign it.
	ReasonUnknown Reason = "assignments-unknown"
)

// Decision is a proposal of the state. Assign and handoff decisions are
// pending until their result is reported; each must get exactly one
// result event.
type Decision struct {
	Kind      Kind
	Publisher peer.ID
	// Indexer is the indexer to assign to or hand off to.
	Indexer string `json:",omitempty"`
	// From is the frozen indexer of a handoff, FrozenID its peer ID (the
	// FrozenID of the admin handoff request).
	From     string  `json:",omitempty"`
	FrozenID peer.ID `json:",omitempty"`
	// Reason is set on KindRetryLater.
	Reason Reason `json:",omitempty"`
}

func (d Decision) String() string {
	switch d.Kind {
	case KindAssign:
		return fmt.Sprintf("assign %s to %s", d.Publisher, d.Indexer)
	case KindHandoff:
		return fmt.Sprintf("handoff %s from %s to %s", d.Publisher, d.From, d.Indexer)
	case KindRetryLater:
		return fmt.Sprintf("retry %s later: %s", d.Publisher, d.Reason)
	}
	return fmt.Sprintf("%s %s", d.Kind, d.Publisher)
}
