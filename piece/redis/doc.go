// Package redis is a [piece.Store] on Redis, through go-redis v9, so the
// sampler's index survives restarts and can be shared by several API
// servers. Its semantics are those of piece/memory, checked by the same
// conformance suite (piece/piecetest) against a real redis-server.
//
// # Usage
//
//	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
//	defer rdb.Close()
//	s, err := redis.New(rdb, "piece:", redis.WithCapacity(16))
//	if err != nil { ... }
//	defer s.Close() // does not close rdb
//
// The package has no runnable Example: every call needs a Redis server.
//
// # Keys
//
// All keys live under the prefix P given to New. The hash tag {provider}
// (the provider's base58 peer ID) puts every key of one provider in one
// cluster slot, so the AddPayloads script touches one slot:
//
//	P{provider}:status        HASH  addr text err lasthead head (CID strings, "" for none)
//	                                walked nopiece unretr (HINCRBY counters)
//	                                pieces (distinct pieces, HINCRBY) updated (Unix ns)
//	P{provider}:piece:<cid>   ZSET  the reservoir of the piece <cid> (cid.Cid.String)
//	P{publisher}:walk         STRING  the publisher's walk position ([piece.Walks]):
//	                                "lastHead head tail walked", CIDs or "-"
//	P{publisher}:walkclaim    STRING  the owner that claims the walk, with a TTL (PX)
//
// # Walk positions
//
// The store keeps walk positions ([piece.Walks]), so that Trackers on one
// Redis share the walks of their publishers. ClaimWalk is one script: it
// refuses while another owner's claim key exists, else sets the claim
// with its TTL and returns the position. StepWalk is one script: it
// refuses while another owner's claim exists, or when the position is not
// the step's From (compared as strings), else sets the position, renews
// the claim and adds the counters to the provider's status, atomically.
// Claims expire by the Redis server's clock. On Redis Cluster a step's
// keys must share a slot: the publisher's keys and the status of the ad's
// provider do when the provider is the publisher, as for most deployed
// publishers; a step for another provider is refused (CROSSSLOT).
//
// # Reservoir encoding
//
// A reservoir must be ordered by the 64-bit [piece.PayloadHash], which a
// ZSET score (a float64, exact only up to 2^53) cannot hold. So every member
// has score 0 and is the binary [piece.PayloadKey]: the 8-byte big-endian
// hash followed by the binary payload CID. Members with equal scores are
// ordered bytewise, which is exactly (hash, CID bytes) order, so ZRANGE 0 -1
// returns the kept payloads in ascending hash order and ZREMRANGEBYRANK k -1
// trims the reservoir to the k smallest, with no precision loss.
//
// # Round trips
//
// AddPayloads is one EVALSHA (EVAL on the first call of a fresh server): the
// client hashes the batch and sends at most k keys (the batch's k
// smallest, [piece.SmallestKeys]); the script adds them, trims to k,
// increments the piece count if the reservoir did not exist, and stamps the
// status, atomically. Payloads is one ZRANGE (plus one EXISTS when the piece
// is missing, to tell an unknown provider from an unknown piece).
// UpdateStatus is one MULTI/EXEC of HINCRBY and HSET. Status is one HGETALL.
// No request path uses SCAN or KEYS.
//
// # Pipelining of concurrent reads
//
// The ZRANGEs of Payloads calls made at the same time share round trips
// (auto-pipelining; [WithPipelining], on by default). A call made while no
// read is in flight goes out at once on the caller's goroutine, so a lone
// request waits for nothing. Calls that arrive while a read is in flight
// queue; when it returns, one goroutine sends everything queued at that
// moment (at most [DefaultMaxBatch] commands by default) as one go-redis
// pipeline, hands each caller its own reply, and repeats until the queue
// is empty, then exits. Under load that is one write and one read syscall
// per batch on each side instead of per request, which halves the Redis
// server's CPU time per sample request in the piece benchmark. Every reply
// is read from Redis after its call was made: nothing is cached. A queued
// call whose context ends returns the context's error at once; Close fails
// queued calls with [piece.ErrClosed] and waits for the pipeline in flight.
//
// # Errors
//
// Errors wrap [piece.ErrProviderNotFound], [piece.ErrPieceNotFound],
// [piece.ErrClosed], or name the Redis operation that failed. Close does not
// close the go-redis client, which the caller owns.
package redis
