// Package localpool runs a whole local IPNI pool — generated publishers
// with their ground truth, an assigner, indexer nodes, a scatter front end
// and a piece sampler — on 127.0.0.1, in goroutines of this process or as
// one OS process per role. It is the orchestration behind examples/pool
// (the demo, `make demo`), the test bed of the end-to-end fault tests, and
// what another module's tests import to get a pool in one call:
//
//	p, err := localpool.Start(ctx, localpool.Config{Dir: t.TempDir(), Store: "memory"})
//	...
//	defer p.Close()
//	check, err := p.WaitComplete(ctx) // every multihash of the publishers' truth, found in full
//
// [Pool.Stop], [Pool.Kill], [Pool.Restart], [Pool.AddIndexer] and
// [Pool.AddPublishers] change it while it runs; [Pool.Truth] is the
// publishers' ground truth, [Pool.Check] and [Pool.WaitComplete] compare
// the front end's answers with it, [Pool.Snapshot] reads every role's
// state.
//
// # Roles
//
// Each role is one of the importable role packages of examples/, the same
// code as the example binary of that name:
//
//	indexer-<i>    examples/indexernode  assigner mode, private addresses allowed, Config.Store,
//	               a disk budget (Config.FreezeBudget for indexer-0, Config.DiskBudget
//	               for the others) with a freeze at 90%, data in Dir/indexer-<i>,
//	               the pool's admin token, handoffs from Dir/handoff-from
//	assigner       examples/assignernode every indexer, Config.Replication,
//	               Config.PollInterval, private addresses allowed, the admin token
//	scatter        examples/scatternode  every indexer's find API; the assigner's state API
//	               for the page's pool view (GET / and /status.json)
//	publishers     examples/publishernode Config.Publishers honest publishers
//	               (seed Config.Seed; Config.RemoveEvery, UpdateEvery), announcing
//	               to the assigner, positions in Dir/publishers
//	malicious-<i>  examples/publishernode one publisher with fault
//	               Config.Malicious[i] (seed Seed+1000+i), announcing to the assigner
//	piece          examples/piecenode    the front end's GET /providers, memory store,
//	               private addresses allowed
//
// Publishers announce to the assigner, as in the seed's deployment: it
// assigns each new publisher to the least loaded active indexer (or
// Replication of them) and forwards later announces to the indexers that
// hold it. When indexer-0 fills its FreezeBudget it freezes, the assigner
// sees it at its next poll and hands each of its publishers off to an
// active indexer, which resumes right after indexer-0's last ad; the front
// end answers across frozen and active indexers.
//
// # Sharded pools
//
// With Config.Sharded the pool runs the keyspace-sharded layers of package
// scatter/keyspace: query node roles "query-<i>" (examples/query), the
// indexers as ingest nodes writing to them through durable outboxes, and
// the front end reading the layout. The layout file ([LayoutFile] in
// Dir, the one source of the epoch) and the query nodes' token
// ([ShardTokenFile]) are written at [Start]; every sharded role re-reads
// the layout on SIGHUP (a direct call in goroutine mode).
// [Pool.AddQueryNode] and [Pool.RemoveQueryNode] change the ring through a
// keyspace.Coordinator, live; [Pool.ShardSnapshot] reports the query layer
// and [Pool.CheckQueryNode] checks one query node on its own keys.
// [Pool.AddIndexer] adds the new ingest node to the layout's writers (in
// a new epoch) before it starts it.
//
// # Goroutine mode and processes mode
//
// A role starts one way in either mode. The pool builds its package's
// typed Config (and the names and ports of its listeners); the role binds
// each listener on 127.0.0.1 (any free port at its first start, the same
// port at each restart, so that the assigner's and the front end's
// configuration stay valid) and starts through its package's New, Run and
// Close; it is ready when New has returned. By default that is a
// goroutine of this process. With Config.Processes it is a child process:
// Config.Executable (default: the running executable) with the hidden
// subcommand
//
//	<executable> role <indexer|assigner|scatter|publisher|piece|query>
//
// which [ServeRole] serves: a program that may run a pool in processes
// mode calls rolemain.Run first thing in main, and a test binary in TestMain;
// nothing is built at run time. The child reads the Config, as JSON, on
// its standard input, logs msg="role ready" with its listeners' addresses
// once New has returned, and stops gracefully on SIGTERM. What cannot
// cross a process boundary is rebuilt in the child from the Config: its
// logger, and the piece sampler's key from the key file in its directory.
// [Pool.Kill] is then a SIGKILL: crash tests need it. A role's log lines
// (slog text) go to Config.Log with role=<name>, and to [Pool.LogLines]
// and [Pool.WatchLog], in either mode.
//
// Since every role is on loopback, the roles that dial addresses others
// name (indexers, the assigner, the piece sampler) allow private
// addresses, which by default they refuse; the pool logs this at start.
//
// # Admin token and handoff sources
//
// [Start] writes a new random token to Dir/[AdminTokenFile] (mode 0600):
// every indexer requires it on its admin API and the assigner sends it
// (the pool puts it in their Config, which reaches a child on its
// standard input, so the token is on no command line); the pool's
// own admin calls ([Pool.Snapshot]) send it too, and [Pool.AdminToken]
// gives it to a test or a demo (admin.WithClientToken). Dir/[HandoffFromFile]
// lists the find URLs of the pool's indexers, the only frozen indexers a
// handoff may name; the pool rewrites it once it has started an indexer,
// and the indexers read it at each handoff, so an indexer added by
// [Pool.AddIndexer] can hand its publishers off once it freezes without
// restarting the others.
//
// # Faults and lifecycle of roles
//
// [Pool.Stop] stops a role gracefully (SIGTERM, or cancel in process),
// [Pool.Kill] at once (SIGKILL in processes mode; in goroutine mode a role
// can only be cancelled, which is graceful: crash tests need processes),
// [Pool.Start] starts a stopped role again on the same data directory,
// configuration and ports, [Pool.Restart] does both. [Pool.AddIndexer] starts a
// new indexer and restarts the assigner and the front end with it in their
// configuration, as the seed adds an indexer; [Pool.AddPublishers] starts
// more honest publishers (role publishers-<k>, their own seed), as new
// publishers appearing in a running pool. Role operations run one at a
// time.
//
// # Observing
//
// [Pool.Snapshot] reads every role's state: per indexer (admin API GET
// /status, /ingest/assigned, /ingest/status, find API GET /stats, and its
// directory's size) its publishers, the multihashes its store holds (the
// count the front end's page shows, exact or an estimate), disk usage and
// frozen state; per
// publisher (GET /truth) its head, ads, owners and lag; the handoffs done
// (assignments with Continued) and in progress (the assigner's GET
// /assignments). [Pool.WaitFor] polls snapshots until a condition holds.
// [Pool.WatchLog] delivers the next log line of a role that matches, which
// is how a test acts in the middle of something short, such as a handoff
// (msg=decision kind=handoff in the assigner's log), [Pool.LogLines]
// what a role has logged.
//
// [Pool.Truth] is the honest publishers' ground truth (GET
// /truth?entries=1), with the multihashes they removed ([Truth.Removed],
// at most publishernode.MaxRemoved per publisher); [Pool.Check] asks the
// front end for each multihash and compares the answer with it (missing,
// extra and duplicated values; any value of a removed one is extra,
// stale: pass [Truth.Queries] to ask for them too),
// [Pool.CheckIndexer] asks one indexer, [Pool.WaitComplete] waits until
// every truth multihash is answered in full and no removed one at all, and [Pool.Probe] asks one
// multihash of the front end and of every indexer. [Pool.PublisherSpec]
// regenerates any publisher's chain in the caller's process from the
// Config its role runs with (publishernode.Publisher.Advertised lists what
// a malicious one advertises, which nothing may answer).
// [Pool.HaltPublishers] stops production (the publishers keep serving), so
// that a final check compares against a truth that holds still: the
// demo's summary halts, then waits with WaitComplete.
//
// # Pieces
//
// The honest publishers' ads name Filecoin pieces in graphsync metadata
// and, every Config.PieceContextEvery-th new context (default 3), in the
// ContextID as Curio does. [Pool.Pieces] is their ground truth (GET
// /truth?pieces=1: provider, piece CID, payload CIDs); [Pool.SamplePiece]
// asks the piece sampler for a sample of one (GET
// /sample/{provider}/{piece}?seed=, [Pool.SampleURL]), verifies its
// signature (piece.VerifySample) and checks that every sample is a payload
// of the piece.
//
// # Lifecycle and concurrency
//
// [Start] returns a running pool; [Pool.Close] stops every role, in the
// reverse order of their start, and waits for each (it leaves Dir in
// place). A Pool is safe for concurrent use.
//
// # Errors
//
// [Start] wraps [ErrConfig] for a bad [Config] and returns a role's start
// error with its last log lines; role operations wrap [ErrUnknownRole],
// [ErrRunning], [ErrStopped] and, after Close, [ErrClosed]. A role that
// does not answer is not an error of [Pool.Snapshot]: it shows as down.
package localpool
