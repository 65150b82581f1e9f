// Package publishernode is the generated-publisher role of an indexkit
// pool: IPNI publishers that keep producing signed advertisements, serve
// them over ipnisync HTTP and announce each new head, deterministically
// from a seed, so that a test knows the ground truth an indexer must end
// with. A [Node] runs several of them, each on its own listener. It is a
// library: it parses no flags and registers nothing globally; the
// examples/publisher program around it (examples/internal/cmd/publishercmd)
// maps flags onto [Config], and examples/localpool runs it in goroutines,
// or as a process.
//
// # Embedding
//
// A program or a test builds a node from a typed [Config] and one
// listener per publisher, bound by itself, then runs it:
//
//	cfg := publishernode.DefaultConfig()
//	cfg.Publishers, cfg.Seed = 2, 7
//	cfg.Announce = []string{assignerAnnounceURL} // or an indexer's ingest URL
//	ln0, _ := net.Listen("tcp", "127.0.0.1:0")
//	ln1, _ := net.Listen("tcp", "127.0.0.1:0")
//	node, err := publishernode.New(ctx, cfg, publishernode.Listeners{Publishers: []net.Listener{ln0, ln1}})
//	if err != nil { ... }
//	defer node.Close()
//	go node.Run(ctx) // until ctx is done
//	truth := node.Publishers()[0].Truth(true) // what an indexer must end with
//
// A single [Publisher] is an http.Handler too, for a test that serves
// and grows one chain itself ([NewPublisher], [Publisher.Publish]).
//
// # Model
//
// A [Publisher] is one generated chain (ingest/chaingen) with its
// Ed25519 identity, which is also the provider of every ad: ordinary ads
// of [Spec.Entries] multihashes in chunks of [Spec.ChunkSize], and every
// [Spec.RemoveEvery]th ad a removal, every [Spec.UpdateEvery]th a
// metadata update of an earlier context. It is an http.Handler serving
// GET /ipni/v1/ad/head (signed by its key), GET /ipni/v1/ad/{cid} and GET
// /truth, its [Truth] as JSON (?entries=1 lists every multihash with its
// values, and the multihashes whose every context was removed, which an
// indexer must no longer answer: [Truth.Removed]). [Publisher.Publish] appends ads and moves the head;
// [Publisher.Model] is the ground truth as a chaingen model for
// chaingen.Model.Equal against a store, and [Digest] compares an index
// read back through a find API with [Truth.Digest].
//
// # Pieces
//
// Three ads with entries in four name a Filecoin piece in graphsync
// metadata; with [Spec.PieceContextEvery] (-piece-context-every, off by
// default, so chains stay as they were) every Nth new context names its
// piece in its ContextID instead, the dag-cbor [size, pieceCID] Curio
// writes. [Publisher.Pieces] is a piece sampler's ground truth, each
// [Piece] with its payload CIDs; GET /truth?pieces=1 lists them.
//
// Everything derives from the seed: the same [Spec] gives the same
// identity, the same blocks and the same CIDs, and n ads published at
// once are the same as n published one by one. A publisher of a process
// started with -seed s has the seed [PublisherSeed](s, index).
//
// # Faults
//
// For the malicious-publisher tests a [Fault] makes every ad unusable to
// a checking indexer while the head stays validly signed:
// [BadSignature] (ads altered after signing: ingest.ErrSignature),
// [CorruptBlocks] (entry chunks that do not hash to their CIDs) and
// [HugeChunks] (one entry chunk of [HugeChunkEntries] multihashes per ad,
// over the 4 MiB block limit). A faulty publisher's expected index is
// empty: its [Truth] lists nothing and its [Publisher.Model] is empty;
// [Publisher.Advertised] lists what its ads carry (regenerated honestly
// from the same seed), which no indexer may answer. A pool puts one
// faulty process (its own -seed) beside honest ones; [Config.Spec] gives
// the Spec of any publisher of a process, to regenerate it elsewhere.
//
// # Restart
//
// Identity and chain are not stored but regenerated from the seed. With
// Config.Dir (-dir), a [Node] keeps the number of ads of each publisher
// in [StateFile] (written after each round, atomically) and a restart
// regenerates each chain up to that many ads, so it serves the same head
// as before and goes on with the same next ads; a state file written with
// another seed, entries, chunk size, removal or update rate, or fault is
// [ErrState].
// Without Dir every start is fresh from InitialAds. Regenerating costs
// time linear in the ads (about what producing them cost), and a chain is
// held in memory whole.
//
// # Lifecycle and concurrency
//
// [NewPublisher] generates the first ads and starts nothing; a Publisher
// is safe for concurrent use (blocks are served while Publish runs; the
// head moves only once a new ad's blocks are all in place). [New]
// generates the chains and starts nothing; [Node.Run] returns only after
// its servers and its producing goroutine have stopped; [Node.Close]
// releases the announce senders, and the listeners if Run never ran.
// Announce failures (a receiver that is down) are logged and do not stop
// it: the next head is announced anyway.
//
// # Errors
//
// [NewPublisher] wraps [ErrInvalidSpec]; [New] returns [ErrState] or an
// error naming the Config field at fault ([Config.Validate]).
package publishernode
