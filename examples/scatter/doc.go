// Command scatter is a front end for a pool of IPNI indexers: it serves the
// IPNI find API over a scatter/gather of other find APIs (indexkit
// indexers, storetheindex, indexstar), in the role indexstar plays in front
// of cid.contact, without its dropped results and false 404s.
//
//	scatter -backends http://10.0.0.1:3000,http://10.0.0.2:3000
//	scatter -config /etc/indexkit/scatter.json -listen :8080 -cache 100000
//
// # Flags
//
//	-listen ADDR             find API address (default 127.0.0.1:8080; port 0 picks one)
//	-metrics ADDR            Prometheus GET /metrics address (default 127.0.0.1:8081; "" disables)
//	-pprof ADDR              loopback address of Go's /debug/pprof/ profiles, answering no web page or rebound name (default "": none)
//	-backends URL[,URL...]   backend find API base URLs; may be repeated
//	-config FILE             config file (below), re-read on SIGHUP
//	-layout FILE|etcd://HOST:PORT[,HOST:PORT...]/PREFIX
//	                         scatter/keyspace layout of a keyspace-sharded query layer (below),
//	                         re-read on SIGHUP (etcd: followed by a watch); replaces -backends and
//	                         the file's Backends and Ring
//	-layout-poll D           with a -layout file, how often to read it for a new layout (default 0: only on SIGHUP)
//	-presence-ttl D          with an etcd -layout, the lease TTL of the front end's status key (default 0: 5s)
//	-timeout D               how long each backend may take per request (default 5s);
//	                         given explicitly, it overrides the file's Timeout
//	-hedge D                 with a Ring or -layout, ask a key's owners one after the other: the next
//	                         after D without a complete answer, or at once when those asked failed
//	                         (default 0: all owners at once)
//	-cache N                 result cache of N answers (default 0: none)
//	-cache-ttl D             how long a cached answer is kept (default 30s)
//	-cache-negative-ttl D    how long a cached "not found" is kept (default 5s; 0: never cached)
//	-shutdown-timeout D      how long requests in flight may take on shutdown (default 10s)
//	-assigner-state URL      the assigner's state API (GET /indexers, /assignments), shown in
//	                         GET /status.json and on the page (default "": none)
//	-log-level L             debug, info, warn or error (default info)
//	-max-conns N             open connections per listener; a new one evicts the longest exchange (default 1024; 0: no cap)
//	-max-conns-per-ip N      open connections per listener from one IP (IPv6 /64); more are closed (default 64; 0: no cap)
//
// The servers cut a request whose header takes over 10s or whose body over
// 30s, and an answer that takes over 60s to write; an NDJSON answer gets
// a minute per line instead, so a long stream is not cut. Its client opens
// at most 32 connections per backend, within the per-source cap of the
// indexers' listeners (64 by default).
//
// Both listeners default to loopback: put the find API on a public address
// on purpose (-listen :8080), and keep /metrics where only the monitoring
// system reaches it.
//
// # The page and its status
//
// Besides the find API, the find listener serves a page for people at GET
// / (package scatter/web): a search box that looks a CID or multihash up
// through the find API and shows the providers, their protocols and
// addresses and whether the answer is complete or partial, and a view of
// the pool with a live chart of the ingest rate and the lookups per
// second. The page reads GET /status.json: the front end's lookup
// counters, every backend's GET /health and GET /stats (asked at most once
// a second, whatever the number of readers; a backend without them shows
// as "unknown"), and with -assigner-state the assigner's publishers and
// handoffs. The page loads nothing from elsewhere. Mind that /status.json
// names the backends' URLs and, with -assigner-state, the publishers and
// which indexer holds each: a front end on a public address shows them to
// anyone.
//
// # Backends and the config file
//
// The backends are those of -backends followed by those of the config file.
// At least one is required; each must be an http or https URL with a host
// and no query, fragment or credentials; a path is kept as a prefix. Two
// URLs that differ only in the case of the scheme or host or in a trailing
// slash are the same backend, and a backend listed twice is an error. Every
// error is reported with the offending value, and the command exits with
// status 1.
//
// The config file is either indexstar's, a JSON array of URLs:
//
//	["http://10.0.0.1:3000", "http://10.0.0.2:3000"]
//
// or an object (unknown fields are an error):
//
//	{
//	  "Backends": ["http://10.0.0.1:3000", "http://10.0.0.2:3000", "http://10.0.0.3:3000"],
//	  "Timeout": "5s",
//	  "Ring": {"Vnodes": 256, "Replication": 2}
//	}
//
// Timeout is the per-backend timeout. Ring, when present, shards the
// keyspace: each multihash is asked only of the Replication backends that
// own it on a consistent-hash ring with Vnodes points per backend (default
// 256), instead of every backend (see scatter.NewRing), and the first of
// them to answer completely gives the answer (the owners are replicas).
//
// A Ring gives complete answers only over backends whose data was placed
// by the same ring. Over a pool of indexers sharded by publisher, each
// holding the multihashes of its own publishers, it asks backends that
// never saw most of a key's providers: the answers look complete and are
// not. Point the front end at a keyspace-sharded query layer with -layout
// instead.
//
// # Layout
//
// -layout FILE reads a scatter/keyspace layout (the JSON file keyspace.Save
// writes and every process of the two layers re-reads on SIGHUP): the
// backends are the URLs of its read nodes and the ring its read ring —
// the Current ring, or the Next one from phase "moved" on — with its
// Replication and Vnodes. Each lookup asks the R owners of its key and
// takes the first complete answer; an owner that fails, answers 5xx (a
// query node catching up answers 503) or runs out of time does not count,
// and only when all of a key's owners fail is the answer partial (502/504,
// or X-IPNI-Backends on a batch). A POST /multihash batch is split by
// owner: each query node gets one request with only its keys. -hedge D
// asks a key's primary alone and the next owner only when it fails or has
// not answered within D: a lookup then usually touches one query node, and
// over HTTP/1.1 no connection is lost to cancelling a losing owner's
// request. With -layout, the config file may give Timeout only. GET /shard/v1/status
// answers {"Role":"frontend","Epoch":N}, N the epoch of the layout in
// force (0 without -layout), which the layout's coordinator reads before
// it publishes the next epoch.
//
// # Layout on etcd
//
// -layout etcd://HOST:PORT[,HOST:PORT...]/PREFIX takes the layout from
// etcd instead (package scatter/keyspace/etcdlayout: the key
// PREFIX/layout, which the coordinator publishes epoch by epoch): the
// front end follows it by a watch, with no SIGHUP or -layout-poll, and
// keeps {"Role":"frontend","Epoch":N} under PREFIX/live/frontend/<its
// -listen address>, bound to a lease of -presence-ttl, so the coordinator
// sees it without asking. Cut off from etcd for longer than that lease is
// sure to last, the coordinator may move two epochs on without it: the
// front end is then fenced, and no answer of it looks complete (a key not
// found is 502, not 404; results are marked Cache-Control: no-store with
// X-IPNI-Backends 0/1) until it reaches etcd again and runs the layout in
// force. The processes talk to etcd through its JSON gateway (POST /v3/...
// on the client URLs), which every etcd serves.
//
// # Reload
//
// On SIGHUP the config file and the -layout file are read again (the
// flags stay as given). A
// valid config that differs from the current one is built into a new
// Gather, with fresh circuit breakers and cache, and swapped in atomically:
// requests that arrive from then on use it, requests in flight finish on
// the old one. A config that does not load (unreadable, bad JSON, no
// backends, a bad or duplicate URL, a layout that does not validate) is
// logged with the reason and the current Gather kept;
// an unchanged config keeps the current Gather and its breaker state. Unlike
// indexstar, the file is read only on SIGHUP, not polled.
//
// # Answers
//
// The routes and status rules are those of find.Handler: GET
// /multihash/{mh} and /cid/{cid} (JSON, or NDJSON with Accept:
// application/x-ndjson), POST /multihash, GET /providers[/{id}]. Without
// a ring, results of every backend are merged and de-duplicated by
// provider and context; with one, the first complete answer of a key's
// owners is the answer. 404 means every backend asked answered "not found"
// (with a ring: one owner did); when some did not answer,
// the answer carries X-IPNI-Backends: answered/total and Cache-Control:
// no-store, or is 502/504 if nothing was found.
//
// # Metrics
//
// GET /metrics on the -metrics address, with backends labelled by URL:
//
//	indexkit_scatter_backend_request_duration_seconds{backend}  histogram (hook)
//	indexkit_scatter_backend_requests_total{backend}            counter
//	indexkit_scatter_backend_errors_total{backend,kind}         kind: timeout, error, breaker_open
//	indexkit_scatter_breaker_state{backend}                     0 closed, 1 open, 2 half-open
//	indexkit_scatter_breaker_state_changes_total{backend,to}    counter (hook)
//	indexkit_scatter_metadata_disagreements_total{backend}      counter (hook)
//	indexkit_scatter_queries_total, _partial_answers_total      counters
//	indexkit_scatter_cache_hits_total, _cache_misses_total      counters; _cache_entries gauge
//	indexkit_scatter_backends                                   gauge: current backends
//	indexkit_scatter_config_reloads_total{result}               applied, unchanged, failed
//
// plus the Go runtime and process collectors. The series marked (hook) are
// fed by scatter.GatherHooks as requests run; the others are read from
// Gather.Stats at scrape time, summed over every Gather the process has
// run, so counters carry on across reloads. breaker_state covers the
// current backends only.
//
// # Logs and signals
//
// Logs are slog text lines on standard error: one "listening" line per
// server with its bound address (name=find, name=metrics or name=pprof,
// addr=HOST:PORT), then the config (msg=starting), reloads, breaker state changes, and
// shutdown. SIGINT or SIGTERM stops accepting connections and lets
// requests in flight finish for up to -shutdown-timeout, then closes the
// connections left; the exit status is 0 after a shutdown, 1 after any
// error (a listener's port already in use: "scatter: -listen ADDR: ...").
//
// # In process
//
// The program itself is Main in examples/internal/cmd/scattercmd; this
// command only calls it under a context that SIGINT and SIGTERM cancel, so
// that a pool can run the same program in a process of its own
// (examples/localpool). Main is flags, metrics, profiles and listeners
// around the typed scatternode.Scatter (scatternode.New, Run, Close),
// which a Go program or test embeds directly.
package main
