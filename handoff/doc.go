// Package handoff moves a publisher from a frozen indexer to an active one,
// so that ingestion continues on the active indexer right after the last
// advertisement the frozen one processed (the "Publisher Handoff" of the
// IPNI scaling design). It also holds the indexer's persisted publisher
// assignments, which handoffs and plain assignments share.
//
// # Model
//
// A frozen indexer stores no new multihashes; its provider records carry
// FrozenAt (the last advertisement processed before it froze) and
// FrozenAtTime, served by its find API's GET /providers. The assigner,
// seeing it frozen, picks an active indexer for each of its publishers and
// sends it a POST {admin}/ingest/handoff/{publisher} (ingest/admin's
// Client.Handoff) with
// the JSON [Request] {"FrozenID","FrozenURL"}. The active indexer's admin
// handler decodes it ([DecodeRequest], whatever the Content-Type: the
// reference assigner sends none) and calls [Receiver.Handoff], which:
//
//   - refuses when this indexer is frozen ([ErrFrozen]; the reference does
//     not check), the policy denies the publisher ([ErrNotAllowed]), the
//     FrozenURL is not one of the frozen indexers it accepts
//     ([ErrUnknownIndexer], with [WithFrozenIndexers]), or the publisher
//     is assigned here already ([ErrAlreadyAssigned]);
//   - reads the frozen indexer's GET /providers (decoded as a stream,
//     bounded by [WithMaxBodySize], within the caller's context and the
//     HTTP client's timeout) and keeps every record published by the
//     publisher: all of its providers, where the reference keeps the first.
//     None is [ErrUnknownPublisher], where the reference answers 200 and
//     leaves the publisher assigned nowhere. The FrozenURL is the admin
//     caller's choice, so the default client dials only what its dial
//     policy allows ([WithDialPolicy]; public addresses unless the pool
//     allows private ones), and no request follows a redirect;
//   - checks every FrozenAt of those records against the publisher
//     before it changes anything (below, "Checking FrozenAt");
//   - registers those providers in the store (AddrInfo, Publisher,
//     ExtendedProviders; not the frozen indexer's LastAdvertisement,
//     LastError or FrozenAt);
//   - sets the publisher's walk to resume after FrozenAt (below);
//   - persists the assignment with Continued = FrozenID in the [Registry];
//   - announces the publisher to ingestion with head cid.Undef, so the
//     walk starts now rather than at the publisher's next announce.
//
// The assigner learns that the handoff completed from the 200, and after
// its own restart from GET /ingest/assigned ([Receiver.Assignments]),
// where Continued names the frozen indexer.
//
// # Where ingestion resumes
//
// A publisher has one chain, but each of its providers' records has its
// own FrozenAt: the last advertisement of that provider, which for a
// publisher signing for several providers differs from provider to
// provider. The chain was applied up to the newest of them. FrozenAtTime
// cannot always tell which is newest (indexkit's freeze stamps every
// record with the time of the freeze, and the find API's RFC 3339 times
// are usually to the second), so the Receiver does not guess: it calls [Ingest].Reset once
// per distinct FrozenAt, each of which marks that advertisement applied,
// ending with the one of the newest FrozenAtTime (the first listed among
// equals), which becomes the walk's last head. Walking back from the
// publisher's head, the walker stops at the first applied advertisement it
// meets, which is the newest FrozenAt in the chain, whichever record it
// came from. Advertisements up to it are neither fetched nor indexed here:
// the frozen indexer holds them. [ResumePoints] computes those resets and
// [Resume] makes them; an indexer unfreezing itself resumes its own
// publishers the same way, from its own records.
//
// Records without FrozenAt (the frozen indexer had not frozen them) leave
// the walk as it is: the next walk ingests the whole chain, as the
// reference does. The handoff still succeeds and logs a WARN saying so.
//
// # Who may hand off, and checking FrozenAt
//
// The admin API's bearer token authenticates the assigner; nothing in the
// reference authenticates the frozen indexer a handoff names, and the
// FrozenAt it reports decides which advertisements this indexer never
// fetches. Two checks narrow that down:
//
//   - [WithFrozenIndexers] (or [WithFrozenIndexersFunc], read at each
//     handoff) lists the find URLs of the pool's indexers; a request
//     naming another FrozenURL is refused with [ErrUnknownIndexer] before
//     any request is made. Without it any FrozenURL is accepted (the
//     reference's behaviour), and an indexer binary should say so at
//     start.
//   - Each distinct FrozenAt is fetched from the publisher through
//     [Ingest].CheckAd (at the publisher addresses of the frozen records,
//     else those ingestion knows) and must be an advertisement whose
//     bytes hash to it, signed by its provider or the publisher, and whose
//     provider is one of the records' providers. Otherwise the handoff is
//     refused with [ErrBadFrozenAt], or [ErrPublisherUnreachable] when the
//     publisher cannot be reached, and nothing has changed: no provider
//     registered, no walk reset, no assignment. A handoff therefore needs
//     the publisher up; the assigner retries a failed one at its next
//     poll.
//
// The check proves that FrozenAt is a genuine advertisement served at the
// publisher's address; it cannot prove that the frozen indexer really
// processed the chain up to it (a listed indexer that lies about how far
// it got still makes this one skip advertisements), nor, over plain HTTP,
// that the server at that address is the publisher (the signature binds
// the advertisement to its provider or publisher, not to the chain).
//
// # Assignments
//
// [Registry] is the persisted set of assigned publishers, kept in the
// node's go-datastore under /handoff/assigned/<publisher> so that it
// survives restarts: plain assignments ([Receiver.Assign], POST
// /ingest/assign/{id}; [Receiver.Unassign], PUT /ingest/unassign/{id}) and
// handed-off ones, which record Continued. They live here, not in the
// assigner package, because a handoff must check and record an assignment
// atomically with its own progress (a publisher being handed off counts
// as assigned), and the indexer binary needs the same set to decide which
// publishers to ingest; the assigner package imports this one for the
// admin API. The Registry does not start or stop ingestion: the binary
// consults [Registry.Assigned] in its announce policy.
//
// # Errors and the admin API
//
// Errors wrap the sentinels in errors.go. The admin HTTP API is
// ingest/admin's (its handler, its wire contract: status, a fixed body
// and an Indexkit-Error code per sentinel); the indexer binary's admin
// Node translates this package's sentinels to that package's, which it
// answers as follows:
//
//	handoff                 ingest/admin        status  reference
//	ErrAlreadyAssigned      ErrAlreadyAssigned    400     400
//	ErrInvalidRequest       ErrBadRequest         400     400 (missing body)
//	ErrNotAllowed           ErrNotAllowed         403     403
//	ErrNotAssigned          ErrNotAssigned        404     404
//	ErrUnknownPublisher     ErrUnknownPublisher   404     200, publisher orphaned
//	ErrUnknownIndexer       ErrUnknownIndexer     403     (not checked)
//	ErrBadFrozenAt          ErrBadFrozenAt        422     (not checked)
//	ErrFrozen               ErrFrozen             500     500 empty (assign); 200 (handoff)
//	ErrFrozenIndexer,       ErrUpstream (with     502     500
//	ErrInvalidProviders,    the error's text)
//	ErrTooLarge,
//	ErrPublisherUnreachable
//
// The error's text names the URL and the frozen indexer's status, or
// where its answer stops decoding, never what it wrote (not even the
// character encoding/json would quote), which the admin API would echo to
// its caller: the start of the answer goes to the debug log.
//
// The reference assigner treats every status but 200 as a failure and
// tries the next indexer, so the departures change nothing for it.
// ingest/admin's client turns an answer back into its sentinels. The
// frozen indexer's GET /providers is read in scatter/find's model
// (find.ProviderInfo, find.ProviderRecords); a status other than 200 and
// 204 there is a [*StatusError] under [ErrFrozenIndexer].
//
// # Wiring an indexer
//
// A node connects its freezer to this package with [OnFreeze] and
// [OnUnfreeze] (freeze.WithOnFreeze, freeze.WithOnUnfreeze: the snapshot
// of FrozenAt, and the resume from it), gives the [Receiver] its store
// through [DurableRecords], and takes the pool's list of frozen indexers
// from a file with [WithFrozenIndexersFile]. Each flushes the store
// before the step is recorded done, so a store without a write-ahead log
// loses none of them.
//
// # Lifecycle and concurrency
//
// [NewRegistry] and [NewReceiver] start nothing and hold no
// resources of their own; the datastore and store belong to the node.
// Every method is safe for concurrent use. Handoffs of different
// publishers run concurrently; of one publisher, one runs and the others
// get [ErrAlreadyAssigned]. The steps of a handoff are persisted in the
// order listed above, the assignment last, so a handoff interrupted by a
// crash leaves the publisher unassigned and is simply done again.
// Provider records are written without the ingester's provider lock: in
// assigner mode a publisher that is not assigned yet is not ingested, so
// no walk writes its records at the same time.
//
// # Why the surface is this large
//
// handoff exports more names than most packages (over 60, counting
// methods) mostly through methods: [Node] is the indexer's side of the
// whole admin contract (an admin.Node with its optional capabilities),
// about one method per route. Its
// own names are the [Receiver] with its [Option]s, the [Registry] of
// assignments, the [Ingest] seam ([FromIngester]), the [Request] wire
// form, the resume and freeze helpers ([Resume], [ResumePoints],
// [Snapshot], [Unfreeze]) and the sentinels, most of them the admin
// contract's own values.
package handoff
