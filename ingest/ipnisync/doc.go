// Package ipnisync is the IPNI HTTP publisher protocol ("ipni-sync"), both
// sides: a [Publisher] that serves an advertisement chain and a [Client]
// that fetches it, wire-compatible with go-libipni's dagsync/ipnisync.
//
// # Protocol
//
// Under a publisher's base URL (which may carry a path prefix, given in a
// multiaddr as /http-path/<escaped path>):
//
//	GET /ipni/v1/ad/head    200 a dag-json [SignedHead]; 204 when there is no head yet
//	GET /ipni/v1/ad/{cid}   200 the block's bytes as stored; 404 unknown; 400 not a CID
//
// Blocks are served byte for byte, so that any client can hash them
// against their CIDs: dag-json blocks as application/json, dag-cbor blocks
// as application/cbor (the IPNI HTTP provider specification reads these as
// dag-json and dag-cbor), with Cache-Control "public, max-age=29030400,
// immutable" and an ETag of the quoted CID (If-None-Match gets 304). The
// head is application/json with Cache-Control "no-cache, no-store,
// must-revalidate". The reference publisher re-encodes every block as
// dag-json and sets neither header; its clients ignore both.
//
// The head names the newest advertisement and is signed by the publisher's
// libp2p key over the head CID's bytes followed by the topic
// ([DefaultTopic] unless [WithTopic]); a client checks that the key derives
// to the publisher's peer ID. Ed25519, secp256k1, ECDSA and RSA keys work.
//
// Over libp2p, the same handler is mounted with go-libp2p's libp2phttp under
// the protocol ID [ProtocolID] ("/ipni/v1/ad", the same string as the
// path): [Publisher.MountLibp2p] on the server side, [WithLibp2p] on the
// client side.
//
// # Lifecycle
//
// [NewPublisher] takes the signing key and a [BlockSource]; the caller
// mounts the publisher on its own server (it is an http.Handler) or on a
// libp2phttp host, and calls [Publisher.SetHead] as the chain grows. It
// starts nothing and has nothing to close.
//
// [New] (from a peer.AddrInfo) or [NewURL] (from a URL) make a [Client],
// which does no I/O until [Client.Head] or [Client.Block]. Each request is
// bounded by [WithTimeout] (default 10 s) as well as by the caller's
// context. [Client.Close] releases idle connections.
//
// # Dial policy
//
// A publisher's address comes from a stranger (an announce, a provider
// record), so a client connects only where a netpolicy.Policy allows:
// its own transport dials through [WithDialPolicy]'s policy, by default
// netpolicy's (public addresses only: not loopback, private, link-local,
// CGNAT or cloud metadata addresses), checked after name resolution. A
// pool on a private network or on one machine passes
// netpolicy.New(netpolicy.AllowPrivate()). No client follows a redirect
// (netpolicy.ErrRedirect), not even over a caller's [WithHTTPClient]. Over
// libp2p the host dials: build it with the gater [NewGater] makes of the
// policy (the libp2p.ConnectionGater option).
//
// # Checks
//
// A client verifies every head's signature and signer (unless
// [WithoutHeadVerification]) and every block's bytes against its CID, reads
// at most [WithMaxBlockSize] bytes of a block (default 4 MiB, the limit of
// ingest/schema) after gzip decoding, and asks for gzip. A body with a
// Content-Length is read into one buffer of that size, to its end, so that
// the connection is kept alive for the next block. It does not decode
// blocks: ingest/schema does. [Client.BlocksVerified] says that blocks are
// verified, so that package ingest's walker hashes them only once, and
// [Client.ReleaseBlock] takes back a block's memory, which package
// ingest's walker gives back once it has indexed an entry chunk: later
// bodies of a like size (by classes of powers of two, 4 KiB to 4 MiB, in
// pools that every Client of the program shares) are read into it, so
// that a walk at full rate does not allocate what it fetches.
//
// # Concurrency
//
// Publisher and Client are safe for concurrent use.
//
// # Errors
//
// Client errors name the URL requested and wrap [ErrNoHead],
// [ErrHashMismatch], [ErrBlockTooLarge], [ErrMalformedHead],
// [ErrBadSignature] or [ErrTimeout], or netpolicy.ErrForbiddenAddress and
// netpolicy.ErrRedirect; an unexpected status is a [*StatusError] (which
// matches [ErrNotFound] for 404). Test them with errors.Is and errors.As.
// No error quotes what a publisher wrote in an error answer: errors end
// up in ingestion statuses and provider records anyone can read. The
// client logs the start of such a body at DEBUG level.
package ipnisync
