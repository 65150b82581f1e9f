// Command assigner assigns the publishers of IPNI announces to a pool of
// indexer nodes, keeps each publisher at its replication, and hands the
// publishers of a frozen indexer off to active ones. It persists nothing:
// at start it rebuilds its state from the indexers' admin APIs. It is thin
// wiring of [github.com/indexkit/indexkit/assigner.Service].
//
// # Synopsis
//
//	assigner [-config FILE] [-indexer admin=URL,find=URL,ingest=URL ...] [flags]
//
// # Description
//
// At start the assigner asks every indexer, concurrently, for GET
// /ingest/assigned, GET /status and GET /ingest/preferred (each request
// bounded by -request-timeout; an unreachable indexer is offline and
// asked again at the next poll). It then takes announces on -listen (PUT
// /announce and PUT /ingest/announce, CBOR or JSON: 204, 400 for a bad
// body, 403 for a publisher the policy rejects, 429 over -announce-rate
// and 503 when it cannot take the announce now, both with a Retry-After)
// and, with -p2p, on the
// gossip topic, where it also republishes HTTP announces with OrigPeer.
// An announce of a publisher the assigner does not know yet is first
// checked: the publisher's signed head is fetched from the HTTP address
// the announce names, or, when it names only libp2p addresses (such as
// /ip4/203.0.113.7/tcp/4001/p2p/12D3KooW…), over libp2p from those
// (-p2p-verify, on by default: with the -p2p host, or without -p2p a
// host of its own that listens nowhere and only dials), and must be
// signed by the publisher's key; an announce that does not verify is
// dropped (logged as a WARN, counted in indexkit_assigner_verify_*_total)
// and assigns nothing. At most 8 heads are fetched at once and 256 more
// publishers wait (the announce of another unknown publisher is then
// answered 503), and a publisher that failed is not fetched again for a
// minute. The fetch
// connects only to public addresses unless -allow-private-addrs is given,
// over HTTP and libp2p alike.
// A publisher short of its replication is assigned (POST
// /ingest/assign/{id}) to the best candidates — those holding its data
// first, then the least loaded — and the announce is forwarded to each
// new indexer's ingest API so it syncs at once; later HTTP announces are
// forwarded to the indexers holding the publisher. Every -poll-interval
// the indexers are polled again; each publisher of an indexer found
// frozen is handed off (POST /ingest/handoff/{id}) to its own best
// candidate, which resumes after the frozen indexer's last advertisement.
//
// Indexers are added or removed by editing the pool and restarting.
//
// # Configuration
//
// The JSON file of -config has the keys below (Indexers, Replication,
// PresetReplication, PollInterval, Policy, Topic, and one per flag in
// CamelCase: Listen, StateListen, Metrics, P2P, P2PVerify, RequestTimeout, AdminToken,
// AdminTokenFile, AllowPrivateAddrs, LogLevel, ShutdownTimeout, MaxConns,
// MaxConnsPerIP, AnnounceRate, AnnounceRateExempt, GossipPeerRate);
// flags given on the command line override it, and -indexer adds to its
// pool:
//
//	{
//	  "Indexers": [
//	    {"AdminURL": "http://10.0.0.1:3002", "FindURL": "http://10.0.0.1:3000",
//	     "IngestURL": "http://10.0.0.1:3001", "PresetPeers": ["12D3KooW…"]},
//	    {"AdminURL": "http://10.0.0.2:3002", "FindURL": "http://10.0.0.2:3000",
//	     "IngestURL": "http://10.0.0.2:3001"}
//	  ],
//	  "Replication": 2,
//	  "PresetReplication": 1,
//	  "PollInterval": "5m",
//	  "Policy": {"Allow": true, "Except": []},
//	  "Topic": "/indexer/ingest/mainnet"
//	}
//
// An indexer's ID (in logs, metrics and the state API) is its AdminURL
// unless "ID" is set. URLs without a scheme get http://.
//
// # Flags
//
//	-config FILE              JSON configuration
//	-indexer admin=URL,find=URL,ingest=URL[,id=NAME][,preset=PEER]
//	                          add an indexer (repeatable)
//	-replication N            indexers per publisher (1)
//	-preset-replication N     indexers per preset publisher (1)
//	-poll-interval D          status poll period (5m)
//	-request-timeout D        bound of each request to an indexer (30s)
//	-topic T                  gossip topic (/indexer/ingest/mainnet)
//	-listen ADDR              announces (127.0.0.1:3001)
//	-state-listen ADDR        state API (127.0.0.1:3010)
//	-metrics ADDR             Prometheus /metrics (127.0.0.1:3011; "" disables)
//	-p2p MADDR                libp2p listen address for gossip ("none", the default, disables it)
//	-p2p-verify               verify the heads of publishers that announce only libp2p addresses
//	                          over libp2p (true; false: such publishers are never assigned)
//	-admin-token TOKEN        bearer token of the indexers' admin APIs (shows in ps)
//	-admin-token-file FILE    file whose first line is that token; without either flag,
//	                          $INDEXKIT_ADMIN_TOKEN (giving both flags is an error)
//	-allow-private-addrs      fetch unknown publishers' heads from loopback and private
//	                          addresses too (a private pool; logged as a WARN at start)
//	-log-level LEVEL          debug, info, warn, error (info)
//	-shutdown-timeout D       wait for requests in flight on SIGTERM (10s)
//	-max-conns N              open connections per listener; a new one evicts the longest exchange (1024; 0: no cap)
//	-max-conns-per-ip N       open connections per listener from one IP (IPv6 /64); more are closed (64; 0: no cap)
//	-announce-rate R          HTTP announces a second per known publisher (2R at once), per source IP
//	                          for unknown ones (10R at once); more get 429; announces of a publisher
//	                          being verified or assigned are free (10; 0: no limit)
//	-announce-rate-exempt P   CIDRs -announce-rate does not limit (none; a pool on one host gives 127.0.0.0/8,::1/128)
//	-gossip-peer-rate R       gossip announces a second per propagating peer, 2R at once (100; 0: no limit)
//
// The HTTP servers cut a request whose header takes over 10s or whose body
// takes over 30s, and an answer that takes over 60s to write, so that slow
// clients cannot hold connections; with the connection caps, a flood of
// them cannot exhaust the assigner's file descriptors.
//
// # State API
//
// Read-only, JSON, on -state-listen:
//
//	GET /assignments   every publisher: its indexers (with Continued after a
//	                   handoff), requests in flight, why it waits; incomplete handoffs
//	GET /indexers      every indexer: known, online, frozen, peer ID,
//	                   assignments, requests in flight, refusals
//
// # Output
//
// Logs are slog text lines on standard error. Each listener logs
// msg=listening name=<announce|state|metrics|p2p> addr=<address>, then
// msg=starting; decisions (msg=decision kind=assign|handoff|retry-later),
// request results (msg="request done") and offline indexers are logged
// with the attributes publisher and indexer.
//
// # Metrics
//
// indexkit_assigner_announces_total{source}, decisions_total{kind},
// requests_total{kind,indexer,outcome}, request_duration_seconds{kind},
// forwards_total{indexer,result}, polls_total{indexer,result},
// poll_duration_seconds, announce_{duplicates,denied,malformed,republished,rate_limited,
// publisher_limited,coalesced,refused,deferred}_total,
// verify_{verified,unverified,skipped,busy,coalesced}_total, verify_waiting,
// and the Go and process collectors.
//
// # Signals
//
// SIGINT or SIGTERM stops the listeners (requests in flight get
// -shutdown-timeout, then their connections are closed), cancels the
// requests to indexers, and exits 0. Nothing is lost: the next start
// rebuilds the state from the indexers. An error at start (a listener's
// port already in use, a -p2p address that cannot be bound) exits 1 with
// "assigner: <error>" on stderr.
//
// # In process
//
// The program itself is Main in examples/internal/cmd/assignercmd; this
// command only calls it under a context that SIGINT and SIGTERM cancel, so
// a whole pool can run the same role in goroutines (examples/pool). Main
// is flags, metrics, listeners and libp2p hosts around the typed
// assignernode.Assigner (assignernode.New, Run, Close), which a Go program
// or test embeds directly: examples/assignernode imports no flag parsing,
// signal handling or Prometheus.
package main
