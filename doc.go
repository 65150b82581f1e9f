// Package indexkit is a set of building blocks for content indexers of the
// InterPlanetary Network Indexer (IPNI) kind, and a set of reference binaries
// that wire the blocks into full nodes.
//
// An IPNI indexer maps content multihashes to the providers that serve them.
// It learns those mappings by walking the signed advertisement chains that
// publishers expose, and answers find queries over HTTP. indexkit splits that
// work into packages that can be used one at a time:
//
//   - the index store, with an in-memory, a Pebble and a LevelDB backend;
//   - ingestion of advertisement chains: the resumable chain walker, entry
//     fetch, the publisher protocol, announces, the provider registry;
//   - freeze and handoff: a node whose disk fills up stops ingesting, and
//     its publishers move to an active node that resumes after its last ad;
//   - the IPNI find API: its wire model, handler, HTTP client and store
//     backend;
//   - the assigner, which spreads publishers over a pool of indexers;
//   - scatter/gather find, which fans a query out to many indexers and
//     merges their answers;
//   - TTL leases with fencing tokens, with initial leases won by auction,
//     for fleets that claim work items;
//   - a piece sampler, which answers which payload CID is in piece P of
//     provider X, with signed answers.
//
// The role packages under examples/ assemble them into a complete indexer
// node, front end, assigner, piece sampler and generated publisher, each a
// typed, importable API (Config, Listeners, New, Run, Close), and
// examples/localpool runs a whole pool of them in one call; the binaries
// under examples/ are flags and metrics over those packages. By design every HTTP surface
// matches the deployed IPNI reference, so that an indexkit node can join a
// pool of reference nodes and replace them one part at a time.
//
// This package holds documentation only; import the packages below.
//
// # Package map
//
// Each package has one job.
//
//   - store: the index, multihash to provider values, and provider records.
//     Interface and data model; never imports a backend.
//   - store/memory: goroutine-safe in-memory store backend.
//   - store/pebble: store backend on cockroachdb/pebble, the default for
//     nodes.
//   - store/leveldb: store backend on LevelDB through go-ds-leveldb.
//   - store/storetest: conformance suite every store backend passes.
//   - ingest: everything between a publisher and a store: the
//     advertisement chain walker, entry fetch, applying ads, per-publisher
//     scheduling, allow/deny policy, provider registry.
//   - ingest/schema: advertisement and entry-chunk types, their dag-json and
//     dag-cbor codecs and signatures.
//   - ingest/metadata: transport metadata codec (bitswap,
//     graphsync-filecoinv1, gateway and piece HTTP, unknown codes kept).
//   - ingest/ipnisync: the IPNI publisher protocol (signed head, blocks),
//     publisher and client, over HTTP and libp2phttp.
//   - ingest/announce: announce messages, the HTTP receiver and sender, and
//     gossipsub on /indexer/ingest/<network>.
//   - ingest/netpolicy: the dial policy of every client that connects to
//     addresses others name (publishers, FrozenURLs): public addresses
//     only unless a private pool allows more; no redirects.
//   - freeze: disk-usage monitor and the persisted frozen state, with
//     crash-safe freeze and unfreeze steps.
//   - handoff: moving a publisher from a frozen indexer to an active one,
//     which resumes right after the frozen indexer's last ad; the
//     persisted assignment registry; the freeze snapshot and the unfreeze
//     resume; and Node, the indexer's side of the admin contract over
//     ingest, freeze and handoff, whose refusals are the contract's own
//     sentinels.
//   - assigner: the publisher to indexer assignment state machine and the
//     service that drives it.
//   - ingest/admin: the indexer admin API contract, handler and client.
//   - scatter/find: the IPNI find HTTP API in one place: the find and
//     /providers wire model, the handler over any Backend, the HTTP client
//     of a remote find API and the store backend, with honest
//     partial-result status.
//   - scatter: fan-out of a find over many Backends (Gather), with
//     per-backend circuit breakers, a result cache and a keyspace ring.
//   - lease: the lease model: catalog rows, TTL leases with fencing tokens
//     granted only by auction, the Store interface its backends implement,
//     and the Lease handle (renew, drain, Done); optional replica slots.
//   - lease/agent: the node agent over a lease.Store: the Manager
//     (heartbeats, renewals, bidding, eviction under a memory budget,
//     drain) and metrics hooks.
//   - lease/memory, lease/redis, lease/etcd: lease backends; Redis
//     scripts use the server's clock as the only clock, etcd keeps time
//     with its own leases and replicates the catalog by raft.
//   - lease/leasetest: conformance suite every lease backend passes, on a
//     fake clock or on real time, with a model test and a porcupine
//     linearizability check.
//   - piece: the piece sampler: a tracker that walks every provider's
//     chain (on the ingest scheduler) into a bottom-k sample of payload
//     CIDs per (provider, PieceCID), and the signed REST API.
//   - piece/memory, piece/redis: piece stores; piece/piecetest: their
//     conformance suite.
//   - internal/...: helpers no importer needs: internal/importrules, the
//     test that enforces the import rules below; ingest/chaingen,
//     which generates signed advertisement chains with their ground truth
//     for tests and benchmarks; internal/testbed/proctest, which runs the example
//     binaries as processes in tests; examples/internal/cli, the plumbing the
//     binaries share (signals, logging, config files, servers);
//     internal/netlimit, the caps that keep a server from being exhausted
//     (connections per listener and per source IP, rates per source);
//     internal/localonly, the guard that keeps web pages (cross-origin
//     and DNS-rebound) off the APIs left without a token on loopback;
//     internal/testbed/browsertest, headless Chromium for the browser tests;
//     internal/logfields, which parses the binaries' slog lines;
//     internal/testbed/netproxy, a loopback TCP proxy for network fault tests;
//     internal/freeport, which picks loopback ports for servers that are
//     told theirs up front; and internal/testbed/redistest, the Redis test support
//     (clients, key prefixes cleaned up with SCAN and UNLINK, redis-servers
//     of a test's own).
//   - examples/...: reference binaries: indexer (a full node), scatter (a
//     find front end over a pool), assigner (the assignment service),
//     publisher (generated publishers with their ground truth, honest or
//     malicious), piece (the piece sampler service), fleet (fleet nodes
//     that win git repositories by auction, with demo and sim modes),
//     benchtable (turns benchmark output into a table), scale (the scale
//     benchmark of a node against raw Pebble, make scale, its logic in
//     examples/internal/scale), and pool, one command that runs a whole
//     local pool and shows it live (make demo).
//   - examples/indexernode, scatternode, querynode, assignernode,
//     piecenode, publishernode: each role as an importable, typed library
//     package (one Config with DefaultConfig and Validate, JSON
//     round-trippable; Listeners the caller binds; New, Addrs, Run, Close;
//     hooks for metrics). A role package parses no flags, takes no
//     signals, serves no profiles and registers nothing globally; its
//     program is examples/internal/cmd/<role>cmd (flags or a JSON file
//     onto Config, Prometheus from the hooks, pprof, signals), and the
//     binary's main is one line over it.
//   - examples/localpool: a whole pool in one call (start, stop, kill,
//     restart, add an indexer, snapshots, ground truth, completeness
//     checks), in goroutines or one process per role; examples/pool, the
//     end-to-end tests and other modules' tests use it.
//   - examples/localpool/rolemain: the program's side of processes mode
//     (signals, exit status) over localpool.ServeRole.
//   - examples/internal/logtap: reads a role's log lines and the listening
//     addresses off them.
//
// # Import rules
//
// The rules keep the leaves light and the tree acyclic; the test in
// internal/importrules enforces them, and a new package needs a rule there
// before it passes.
//
//   - store, freeze, lease, ingest/schema, ingest/metadata and
//     ingest/netpolicy are leaves: they import no other package of the
//     module but internal/errkind, which every package may import (it
//     holds the shared error kinds and imports only the standard library).
//   - Backends import only their parent (and, for store, store/internal);
//     conformance suites import only their parent.
//   - ingest imports store and ingest/*; handoff imports ingest and store,
//     scatter/find (the /providers model), and the leaves ingest/admin
//     and freeze (it implements the indexer's side of the admin contract);
//     assigner imports ingest/admin, ingest/announce, and ingest/ipnisync
//     with ingest/netpolicy (to verify unknown publishers), never handoff;
//     ingest/admin, the contract both sides build on, imports only freeze
//     (and internal helpers); scatter/find
//     imports store; scatter imports store and scatter/find; piece imports
//     ingest and its subpackages, and scatter/find; lease/agent imports
//     lease.
//   - A parent never imports its backends. Only the examples, and tests,
//     import backends and conformance suites; only store/pebble imports
//     Pebble and only store/leveldb imports LevelDB.
//   - internal/... may be imported by the packages that are not leaves,
//     and imports no public package except the leaves.
//   - examples/... may import anything; nothing imports examples/....
//
// # Constructing things
//
// Every public package builds its values the same way, so that a reader
// who has used one constructor knows them all. The test
// internal/importrules/construction_test.go checks rules 2 to 5 and 7 on
// the syntax of every public package and names the file, the line and the
// rule it finds broken.
//
//  1. A constructor is New(required args, opts ...Option) (*T, error), or
//     Open when it touches files (pebble.Open, freeze.Open); a type with a
//     sibling constructor adds its name (NewWalker, NewPublisher). What the
//     value cannot work without is an argument, never an option. The
//     constructor validates everything and starts nothing. Why: one shape
//     to learn, and a bad setting fails at construction, not at first use.
//     A constructor with nothing to validate and no options may return *T
//     alone (store/memory.New).
//  2. An option type is a named func(*config) error over an unexported
//     config of the constructor's package. Each option checks its
//     arguments when it is applied and returns an error naming itself;
//     the defaults are set in one place, the function that makes the
//     config. Why: the config can grow without breaking callers, and an
//     invalid value is refused by New instead of surprising Run.
//  3. One option type per constructor. A package with one main
//     constructor calls it Option; the other constructors' types are named
//     after what they build: WalkerOption, PublisherOption, GossipOption,
//     HTTPSenderOption, MonitorOption, TrackerOption, HandlerOption. Two
//     constructors of the same type may share one (ipnisync.New and
//     NewURL). Why: the compiler then tells which options a constructor
//     takes.
//  4. No option writes an exported struct. Why: the struct's fields would
//     become the API, and an option could reach state the constructor
//     must set up itself.
//  5. No option is accepted and ignored: every config field an option
//     sets is read by the constructor or by what it builds. Where two
//     constructors share settings, each has its own option type with the
//     settings it reads, and the one that builds the other hands the
//     shared settings on (an ingest.Ingester gives its walkers its walker
//     settings). Why: an option that silently does nothing is a bug the
//     caller cannot see.
//  6. Forward, do not re-declare. A package that builds another package's
//     value takes that package's options and passes them through:
//     piece.WithIngestOptions(...ingest.Option),
//     piece.WithAnnounceOptions(...announce.Option),
//     announce.WithPubSubOptions, and engine tuning such as
//     pebble.WithOptions and leveldb.WithOptions. A backend of a plug
//     point takes the options of the package that declares it
//     (lease/memory.New(...lease.Option)): the test accepts the Option of
//     the parent package as a constructor's own. When the wrapper wants
//     other defaults it gives them as options first, so that the caller's
//     win. Why: one knob, one meaning and one default, documented once.
//  7. The same thing has the same name: WithLogger(*slog.Logger),
//     WithHTTPClient(*http.Client), WithHooks(Hooks), WithClock(Clock). In
//     a package with several option types an option of the type XOption
//     may be called WithXLogger, WithXHTTPClient, WithXHooks or WithXClock
//     instead (WithWalkerLogger, WithPublisherLogger, WithGossipLogger,
//     WithTrackerLogger), since Go has one WithLogger per package. Why: a
//     caller wiring a logger or a client looks for one name.
//
// Packages that other work of issue #14 is converting still have a
// pending entry in that test; the entry must go once the package passes.
//
// # Errors
//
// Each package declares its sentinels in errors.go, with messages that
// name the package ("ingest: invalid option"), and wraps them with %w in
// errors that name the operation; test them with errors.Is. Three kinds of
// failure have the same name in every package, and those sentinels match
// each other across packages under errors.Is, so that code wiring several
// packages checks one name:
//
//   - ErrInvalidOption (ErrInvalidConfig where a constructor takes a
//     Config): a constructor refused an option, an argument or a field.
//     errors.Is(err, ingest.ErrInvalidOption) holds for an error of
//     scatter.New, lease/memory.New or agent.NewManager.
//   - ErrClosed: a method was called after Close (store, lease, piece,
//     announce, the outbox, the query node).
//   - ErrRunTwice: Run was called while it runs, or again where a value
//     runs once (freeze, assigner, announce's Gossip, lease/agent, the
//     query node).
//
// internal/errkind makes these sentinels; its test fails when a library
// package declares one of its own with errors.New.
//
// Siblings meet through small interfaces declared by the consumer: freeze
// reports through a callback, and the indexer binary connects it to ingest.
package indexkit
