// Package chaingen generates deterministic, signed IPNI advertisement
// chains together with their ground truth, for the tests, fault tests and
// benchmarks of the ingest walker and of anything that consumes a chain.
//
// # Generating
//
// [Generate] turns a [Config] into a [Chain]: Config.Ads advertisements,
// oldest first in [Chain.Ads], each linked to the previous one by
// PreviousID and signed, with its multihashes in EntryChunk chains of
// Config.ChunkSize entries. Everything derives from Config.Seed: the
// Ed25519 keys of the provider, of the publisher and of the extended
// providers; the addresses; context IDs of 8 to 32 bytes; sha2-256
// multihashes of (seed, ordinal); graphsync-filecoinv1 metadata with a
// piece CID, bitswap and HTTP gateway metadata built with
// ingest/metadata. The same Config gives the same blocks and CIDs, byte
// for byte, and generation is linear in the number of multihashes.
//
// Besides ordinary ads, each of which advertises Config.MhsPerAd
// multihashes under a new context, a chain holds, as Config asks:
// removals (IsRm) of an earlier context, metadata-only updates
// (NoEntries) of an earlier context, ads that add multihashes to an
// earlier context (or bring a removed one back) with new metadata,
// multihashes shared with the previous ad, and ExtendedProvider records.
// With Config.PublisherSigns a publisher key other than the provider's
// signs the ads, as a publisher signing for its providers does.
//
// [Chain.Extend] appends ads on top, as a publisher announcing a new head
// mid-walk does, leaving every earlier block in place; Generate with Ads
// a followed by Extend(b) equals Generate with Ads a+b.
//
// Config.MinMhsPerAd makes the number of multihashes vary from ad to ad
// (small ads of one context each, as Boost and Curio publish).
//
// # Serving
//
// [Chain.Block] returns a block by CID and [Chain.Head] the newest ad;
// [Chain.Source] wraps both in the context-taking shape of a sync client
// (Head(ctx), Block(ctx, id)), ready to put behind a publisher.
//
// # Chains too large to hold
//
// A [Chain] holds every block: about 4 GB for 100 million multihashes.
// [NewOnDemand] makes the same chain as Generate for a Config of ordinary
// ads only (each ad a new context with new multihashes: no removals,
// updates, reuse, sharing, extended providers or piece contexts), keeping
// only the digest of each block, and [OnDemand.Block] encodes and signs
// the block asked for again from the seed. It has no Model: its ground
// truth is [OnDemand.Multihash] of each ordinal, under the context of the
// ad [OnDemand.AdOf] names. [OnDemand.Source] serves it as [Chain.Source]
// does.
//
// # Pieces
//
// Ads with entries name a Filecoin piece in their graphsync-filecoinv1
// metadata (three ads in four; the fourth is bitswap only) or, with
// Config.PieceContextEvery, in their ContextID ([PieceContextID], as Curio
// writes it). Chain.Pieces is the ground truth of a piece sampler: every
// piece with the multihashes advertised under it, removals ignored.
//
// # The model
//
// [Chain.Model] (after every ad) and [Chain.ModelAt] (after ads 0..i)
// give the ground truth an ingester must reach, by these rules of IPNI:
//
//   - Ads apply oldest to newest.
//   - An ad with entries indexes its multihashes under (Provider,
//     ContextID) with its Metadata. If the context already holds
//     multihashes, they stay, and the ad's Metadata replaces the
//     metadata of the whole context.
//   - An ad with Entries = NoEntries and !IsRm replaces the metadata of
//     its context and indexes nothing; for a context that holds nothing
//     it does nothing.
//   - An IsRm ad removes the whole context, whatever its Entries and
//     Metadata. A context removed later in the chain has no entries at
//     the end; an ad with entries after the removal brings the context
//     back with only the multihashes advertised after the removal.
//   - ExtendedProvider records do not change the index: values stay
//     under the ad's Provider.
//
// [Model.Equal] checks that a store.Store holds exactly the model's
// multihashes and values and describes the first differences.
//
// # Faults
//
// [Chain.Corrupt] flips a bit of a block so it no longer matches its CID
// (decoding fails with schema.ErrHashMismatch); [Chain.SetBlock] puts any
// bytes under any CID (an ad re-signed by a stranger, a block of an
// unknown codec); [Chain.RemoveBlock] makes a block unavailable; a
// ChunkSize above about 80,000 gives entry chunks larger than
// schema.MaxBlockSize. None of them changes the model.
//
// Content addressing makes a true cycle impossible: an ad cannot link to
// a CID that depends on its own bytes. What a walker can meet is a
// publisher that lies, serving under the CID of an older ad the bytes of
// a newer one (SetBlock(c.Ads[0], bytes of c.Ads[5])) so that following
// PreviousID would loop: a walker that verifies each block against its
// CID stops there with a hash mismatch, and a test that disables the
// check must still end the walk by its depth limit or its record of
// visited CIDs. For depth limits, a chain of MhsPerAd 0 is a chain of
// NoEntries ads that costs one signature per ad: Config{Ads: 100000}
// takes a few seconds.
//
// # Concurrency and errors
//
// A Chain is safe for concurrent use: blocks can be fetched while another
// goroutine calls Extend (the exported fields are the exception, see
// [Chain]). A Model is immutable. Errors wrap [ErrNotFound],
// [ErrInvalidConfig] or [ErrMismatch], or come from the store being
// compared.
package chaingen
