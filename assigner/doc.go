// Package assigner assigns publishers to the indexers of a pool, keeps
// each publisher at its replication, and hands the publishers of a frozen
// indexer off to active ones: the Assigner Service of the IPNI scaling
// design. Its core is [State], a pure state machine; a service that drives
// it over the indexers' admin API (package ingest/admin) builds on it.
//
// # Model
//
// [State] takes events and returns [Decision]s. It does no I/O, starts no
// goroutines and reads no clock: the same events give the same decisions,
// in the same order (publishers by peer ID, indexers in pool order). It
// persists nothing: like the reference, a service rebuilds it at startup
// by polling every indexer. It is not safe for concurrent use; the service
// serialises events (one mutex, or one loop).
//
// An indexer of the pool ([Config].Indexers, named by its ID, e.g. its
// admin URL) is unknown until its first [State.Polled]; then known, with
// the assignments, frozen flag, peer ID and preferred publishers the poll
// reported, online or offline, and the state's own record of the requests
// in flight to it, the publishers it refused and those a failed request
// may have assigned to it.
//
// # Events and decisions
//
//	event                                 decisions
//	Announce(P)                           Assign / Handoff for P; RetryLater if P waits
//	Polled(I, IndexerStatus)              for every pursued publisher (handoffs of a
//	                                      frozen I's publishers among them)
//	AssignResult(I, P, Outcome)           for P, when pursued (a refused or failed
//	HandoffResult(F, I, P, Outcome)       request goes to the next candidate)
//	Offline(I)                            none
//	Online(I), AddIndexer, RemoveIndexer  for every pursued publisher
//
// Decisions are proposals: [KindAssign] (POST /ingest/assign/{P} on I) and
// [KindHandoff] (POST /ingest/handoff/{P} on I with FrozenID) are pending
// until the service reports their [Outcome] — exactly one result per
// decision. [KindRetryLater] asks for nothing: it says that P stays short
// and why ([Reason]), once per change of reason and on every announce of a
// waiting publisher; the state remembers P and proposes more when an
// event makes it possible.
//
// A publisher is pursued (worked on without waiting for its next announce)
// once it has been announced since the state started, or while a known
// frozen indexer holds it. Like the reference, a publisher is not
// assigned before it announces; unlike it, one that was announced and
// could not be placed is placed as soon as an indexer allows it.
//
// # Counting
//
// A publisher P requires Replication indexers, or PresetReplication when
// it is preset (listed in some indexer's PresetPublishers; only those
// indexers may hold it, and its holders elsewhere are ignored). It has:
//
//	active   known, unfrozen indexers holding P (online or offline: an
//	         offline indexer keeps its publishers)
//	pending  assign and handoff requests for P awaiting their result
//	maybe    indexers that may hold P without the state knowing: unknown
//	         ones (never polled) and those where a request for P failed
//	         since their last poll
//
// and the state proposes required − active − pending − maybe more, never
// beyond. Pending requests count pessimistically (as if they will succeed)
// and are reverted only by their result: Done and AlreadyHeld make the
// indexer a holder; Refused marks the pair refused; Failed (the request
// may have taken effect) moves it to maybe until the indexer's next poll;
// NoSource stops handoffs of P from that frozen indexer. So replication is
// never exceeded, whatever the order of results.
//
// The maybe term is the reference's rule against over-assignment while
// indexers are unknown (storetheindex#1116), made per publisher: an
// unknown indexer blocks only the publishers it could hold (not a preset
// publisher it is not listed for), and a failed request only its own
// publisher. With Replication 1, an unknown indexer still blocks every
// other publisher ([ReasonUnknown]) until it is polled or removed from
// the pool: safety before liveness, as in the reference. [State.MayHold]
// names the indexers of P's maybe term, those whose poll lets P go on;
// the service polls them when P is announced.
//
// # Candidates
//
// A candidate for P is known, online, unfrozen, eligible (in P's preset
// list when P has one), not holding P, without a request for P in flight
// or in doubt, and has not refused P; the policy ([Config].Allow) must
// allow P at all. Candidates are ordered: those preferring P (holding its
// data unassigned, GET /ingest/preferred) first, then the fewest
// publishers (assigned plus pending, so each decision counts for the
// next), then pool order. Refusals are forgotten when a poll shows the
// indexer's frozen flag or peer ID changed, or it comes back online.
//
// # Freezing and handoff
//
// Assignments on frozen indexers do not count toward replication. Each
// publisher P a frozen indexer F holds needs a handoff while P is short
// and the handoff is not done: done when some known indexer lists P with
// Continued = F's peer ID (so the startup rebuild completes handoffs the
// way the reference does), in flight, or impossible (NoSource). The
// missing slots of P are filled with handoffs from such sources first,
// each to P's own best candidate, then with fresh assignments; a source
// that is offline keeps its slot ([ReasonSourceOffline]) rather than let
// P be re-ingested from the start elsewhere. Every publisher is decided on
// its own: a failure re-proposes only that publisher, to the next
// candidate. What cannot be handed off now waits, and is proposed again
// when an indexer is polled, comes online or is added. A publisher
// already at replication elsewhere needs no handoff.
//
// # The reference's defects, fixed
//
//   - Restart removes the wrong indexer: the reference's rebuild drops the
//     receiving indexer of a completed handoff, so a later freeze of the
//     receiver never hands the publisher off. Here the receiver keeps the
//     assignment; its Continued only completes the frozen indexer's
//     handoff.
//   - Handoff ignores counts: the reference sends every publisher of a
//     frozen indexer to the same least-loaded indexer. Here each pending
//     handoff counts toward its receiver's load, so they spread.
//   - Unstable ties: the reference sorts candidates with sort.Sort; here
//     ties go by pool order.
//   - One failure aborts the reference's handoff batch; here decisions are
//     independent.
//
// # State API
//
// [State.Snapshot] returns a JSON-friendly copy for operators (the
// service's GET /indexers and GET /assignments): each indexer's status,
// assignments, pending requests, refusals and doubts; each publisher's
// holders (with Continued), pending requests and waiting reason; the
// incomplete handoffs.
//
// # Service
//
// [Service] drives a State over the indexers' admin API ([NewService],
// then [Service.Run] until ctx ends). One loop goroutine applies every
// event; each assign, handoff, forwarded announce and poll runs in its own
// goroutine bounded by [WithRequestTimeout], so a hung indexer delays
// nothing else. Startup polls every indexer (GET /ingest/assigned,
// /status, /ingest/preferred; unreachable: [State.Offline]), then every
// PollInterval and on [Service.PollNow]. An announce of a publisher that
// must wait polls at once the indexers that may hold it unknown to the
// state ([State.MayHold]: never polled, such as one down at startup, or
// where a request for it failed since their last poll), as the seed's
// assigner retries offline indexers on an announce that needs an
// assignment; once such a poll succeeds the publisher is assigned, not at
// the next PollInterval. No indexer is polled for announces more than
// once per [WithAnnouncePollInterval] (a second): the announces in
// between share one poll at the end of the interval, so a flood of
// announces is not a flood of polls. A poll that overlapped an assign
// or handoff request to the same indexer is discarded and repeated once
// no request is in flight (the ordering contract of [State.Polled]). After
// an assign (or handoff) succeeds, the publisher's latest announce is PUT
// to the indexer's ingest URL; later HTTP announces go to its holders,
// frozen ones included (they still apply removals and updates)
// ([WithResend]). [Service.Handler] takes announces (PUT /announce, PUT
// /ingest/announce); [WithGossip] adds the gossip topic and republishes
// HTTP announces with OrigPeer. [Service.StateHandler] serves GET
// /assignments and GET /indexers. [Hooks] and [Service.Stats] feed
// metrics.
//
// # Verifying unknown publishers
//
// Anyone can send an announce naming any peer ID and any address. Before
// the announce of a publisher the state does not know ([State.Known]:
// not announced since the start, not preset, not held, nothing pending)
// reaches the state, the service fetches the publisher's signed head
// (ingest/ipnisync, which checks the signature and that the key is the
// publisher's) and feeds the announce to the state only if it verifies.
// It fetches the head where an indexer would sync from: over plain HTTP
// from the HTTP addresses the announce names if it names any, and
// otherwise, with [WithVerifyHost], over libp2p streams (libp2phttp) to
// its libp2p addresses, the connection authenticating the publisher's
// peer ID; that connection is closed after the check. An announce that
// does not verify (only libp2p addresses and no verify host, unreachable,
// no head, a malformed head, a head signed by another key, an address the
// dial policy refuses) is dropped
// with a WARN naming the reason: never assigned, forwarded or kept as the
// publisher's latest. So no announce makes the pool assign a publisher
// whose signed head is not served at the address it names, and a flood
// of made-up peer IDs assigns nothing. Announces of a known publisher go
// on at once, as in the reference.
//
// The verification is bounded: at most [WithVerifyConcurrency] heads are
// fetched at once, each within [WithVerifyTimeout], and at most
// [WithVerifyQueue] more publishers wait for theirs, first come first
// served (an announce of another unknown publisher is then refused, see
// Announces); the announces of a publisher being verified or waiting wait
// for that one fetch (the newest is fed to the state if it verifies); and
// a publisher whose head did not verify is not fetched again for
// [WithVerifyRetryAfter] (a bounded memory of a few thousand publishers). The fetches dial only
// what the dial policy allows ([WithDialPolicy]: public addresses by
// default; a pool on a private network or on one machine allows private
// ones; over libp2p, the verify host's gater, ingest/ipnisync.NewGater of
// the same policy) and follow no redirect. [Service.Stats] counts the announces
// verified, dropped as unverified, skipped, dropped as busy and coalesced.
// The check happens in the service's loop, around the state: [State] stays
// pure.
//
// # Announces
//
// The announce receiver hands every announce to the service as it
// arrives (announce.WithSink), and asks it first which limit the announce
// falls under, so that what is limited is what an announce costs, not
// who relays it:
//
//   - a publisher being verified or waiting for it, or with an assign or
//     handoff request in flight: free (announce.ClassPending). The
//     announce is only noted as the publisher's newest; no new fetch, no
//     forward. The newest goes on when the verification or the last
//     request ends: fed to the state, forwarded to the holders.
//   - a publisher the state knows ([State.Known]: announced and
//     verified, held, preset): limited per publisher
//     (announce.WithPublisherRate), whatever address it comes from, so
//     that publishers behind one address do not share a budget.
//   - any other: limited per source address (announce.WithSourceRate).
//
// The loop owns the state; the receiver's handlers read a view of each
// publisher's class that the loop writes as its decisions change it.
// Taking an announce never waits for the loop: when a thousand announces
// wait for it, or when the publisher is unknown and the verification
// queue is full, the announce is refused while its request is open (503
// with a Retry-After), never answered 204 and dropped. Limits are off
// unless given with [WithReceiverOptions]; examples/assignernode sets
// them from -announce-rate.
//
// # Errors
//
// [NewState] and [State.AddIndexer] wrap [ErrInvalidConfig], and so does
// [NewService] for a bad [ServiceConfig]; NewService wraps
// [ErrInvalidOption] for an option given a value out of range. The indexer
// events return [ErrUnknownIndexer] for an ID outside the pool, and
// [State.Polled] [ErrInvalidStatus] for a status without a peer ID. Results
// for an indexer no longer in the pool are ignored; nothing panics.
//
// # Why the surface is this large
//
// assigner exports more names than most packages (over 60, counting
// methods) because it holds the two halves DESIGN.md gives it, and the
// second speaks the first's vocabulary:
//
//   - the pure state machine: [State], [NewState], [Config],
//     [IndexerConfig], the events' inputs and results ([IndexerStatus],
//     [PollResult], [RequestResult]), the [Decision]s with their [Kind],
//     [Outcome] and [Reason], and the assignments ([Assignment],
//     [Assignments], [PublisherAssignment]);
//   - the snapshots the state API serves ([Snapshot], [IndexerSnapshot],
//     [PublisherSnapshot], [PendingSnapshot], [HandoffSnapshot]);
//   - the service loop: [Service], [ServiceConfig], [ServiceIndexer], the
//     [ServiceOption]s with their Default constants, [Hooks],
//     [ServiceStats] and [ExceptPolicy].
//
// The state machine is not split off because the service's options,
// hooks and state API are written in its types; the model-based tests
// drive it without the service.
package assigner
