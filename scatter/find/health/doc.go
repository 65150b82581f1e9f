// Package health serves the two conventional routes of a find listener
// besides the find API: GET /health, which load balancers and the
// reference's tools poll, and GET /stats, which go-libipni's find client
// reads (Client.GetStats).
//
// # /health
//
// 200 application/json, never cached:
//
//	{"Status":"ok","State":"active","ID":"12D3KooW..."}     an indexer
//	{"Status":"ok","State":"active","Backends":2}           a front end
//
// State is "frozen" when [Config].Frozen says so (a frozen indexer still
// answers finds but ingests nothing new), else "active". The answer means
// the listener is up; it reads no store.
//
// # /stats
//
// 200 application/json with the fields of go-libipni's find/model.Stats
// and the number of provider records:
//
//	{"EntriesEstimate":123,"EntriesCount":120,"EntriesExact":true,"Providers":4}
//
// EntriesEstimate is the store's size divided by 40, as the reference
// computes it: for Pebble and LevelDB an estimate from the bytes on disk
// (compression and shared key prefixes make it rough, and it does not move
// while writes sit in memtables). EntriesCount is an exact count where the
// store can give one ([EntryCounter]: store/memory counts its map keys,
// checking each against the live records once one was removed;
// store/pebble and store/leveldb scan the index; both while it holds at
// most 131,072 multihashes, or any number on a memory store that never
// removed a record), with EntriesExact true, and EntriesEstimate again
// where it cannot, with EntriesExact false: a page then labels it "about".
// Providers is exact (one scan of the provider records). A front end answers the sums over
// its backends' /stats ([Sum]), with Backends and BackendsAnswered. The
// counts are reused for [StatsMaxAge], so polling /stats costs at most one
// count (or one fan-out) a second.
//
// Both routes carry Access-Control-Allow-Origin: *, answer OPTIONS
// preflights with 204 and other methods than GET and HEAD with 405.
//
// A [Handler] is safe for concurrent use. Mount it on the find listener's
// mux at "/health" and "/stats" (without a method in the pattern, so that
// it sees the OPTIONS preflights).
package health
