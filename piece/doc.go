// Package piece is the piece sampler: it answers "which payload CIDs are in
// piece P of provider X" from every provider's advertisement chain, with
// answers signed by the server so clients can check them.
//
// # Model
//
// A [Store] keeps, for every (provider, PieceCID) pair, a bounded sample of
// the payload CIDs advertised in that piece: the k payloads with the smallest
// [PayloadHash] (a bottom-k sample, default k = [DefaultCapacity]). The
// sample is uniform over the payloads offered, deterministic, independent of
// the order in which ads are walked and idempotent, so re-applying an ad after
// a crash changes nothing. The store also keeps each provider's ingestion
// [Status]: publisher address, status text, last error, the last walked head
// and the head of the walk in progress, and [Counters]. Pieces are counted as
// they are first seen, so a status request never scans.
//
// Backends live in subpackages: piece/memory (in process) and piece/redis
// (Redis via go-redis). Both pass the conformance suite piece/piecetest.
//
// # Tracking and walking
//
// A [Tracker] fills a Store. It learns providers and their latest heads by
// polling an IPNI /providers endpoint ([WithProvidersURL], every
// [WithPollInterval]), keyed by the provider (AddrInfo.ID) and walked from
// its publisher's HTTP address; it also takes announces
// ([Tracker.AnnounceHandler], [Tracker.Announce]) and walks the publishers
// given by [WithPublishers]. Walks run on the ingest package's scheduler
// (ingest.WithApplier), unordered (ingest.WithUnordered): each ad is
// applied as it is fetched, newest first, so a provider's newest pieces
// are answered while the rest of its chain is still being fetched; verified
// block hashes and ad signatures, one task per publisher under a bound on
// total concurrency (ingest options, [WithIngestOptions]), turns of a few
// dozen ads ([DefaultWalkSlotAds]), per-publisher rate limits and backoff,
// so a slow or broken publisher never blocks the others. [PieceOf] finds
// an ad's PieceCID in its ContextID or in graphsync-filecoinv1 metadata in
// any protocol position; the multihashes of the ad's first entry chunk
// ([WithEntryChunks]: the first n, or all) become payload CIDs
// ([PayloadCID]) offered to the Store. IsRm ads are ignored: pieces are
// immutable.
//
// The head/tail/lastHead position of each publisher's walk is kept by a
// Store that has the [Walks] capability (both backends have it), moved
// together with each ad's counters in one conditional step; several
// Trackers on one Store (one Redis) share the walks by claims with a time
// to live ([WithClaimTTL]), each chain walked about once and counted
// exactly once. With another Store the Tracker's datastore keeps the
// positions. Publishers' addresses come from /providers records and
// announces, so requests to them connect only where the dial policy
// allows ([WithDialPolicy]; public addresses by default), follow no
// redirect, and no status quotes what a publisher wrote in an error
// answer.
//
// # REST API
//
// [NewHandler] serves
//
//	GET /sample/{providerId}/{pieceCid}?seed={seed}[&n={n}]
//	GET /ingestion-status/{providerId}
//
// A sample answer carries the chosen payload CIDs, the server's public key and
// an Ed25519 signature over the DAG-JSON encoding of
// {providerId, pieceCid, seed, samples} (or {providerId, pieceCid, seed,
// error} for a 404); see [SignedBytes] for the exact bytes. Samples are
// chosen from the kept payloads by the seed alone: the same seed over the
// same reservoir gives the same answer. [VerifySample] checks an answer.
// [LoadOrCreateKey] keeps the server key in a file.
//
// # Lifecycle and concurrency
//
// Stores are safe for concurrent use and are closed by whoever opened them;
// the handler holds no goroutines and needs no Close.
//
// # Errors
//
// Store methods return errors wrapping [ErrProviderNotFound],
// [ErrPieceNotFound] or [ErrClosed]; check them with errors.Is. The handler
// maps them to 404 answers with the error codes PROVIDER_NOT_FOUND and
// PIECE_NOT_FOUND.
//
// # Why the surface is this large
//
// piece exports more names than most packages (over 60, counting
// methods) because the sampler's three sides share one model, and a signer
// and a verifier must compute the same bytes:
//
//   - the [Tracker] with its [TrackerOption]s (walking providers' chains
//     through ingest);
//   - the plug point: [Store], the optional [Walks], and their model
//     ([Status], [StatusUpdate], [Counters], [WalkPosition], [WalkStep],
//     the sentinels, [DefaultCapacity]), which the backends piece/memory
//     and piece/redis and the suite piece/piecetest import (a parent never
//     imports its backends, so the model stays here);
//   - the signed REST API: [Handler] and its options, the wire model
//     ([SampleResponse], the Code constants, [MaxSamples], [MaxSeedLen],
//     [ValidSeed], [Choose], [SignedBytes]), keys ([LoadOrCreateKey],
//     [EncodePubKey], [DecodePubKey]) and the client's check
//     ([VerifySample], [VerifyOption], [VerifiedSample]);
//   - the extraction helpers the backends and the tracker share: PieceCID
//     and payload ([IsPieceCID], [PieceOf], [PieceFromContextID],
//     [PieceFromMetadata], [PayloadCID]) and the bottom-k keys
//     ([PayloadHash], [PayloadKey], [PayloadFromKey], [SmallestKeys]).
package piece
