// Package announce carries IPNI announces: the short messages with which a
// publisher tells indexers "my advertisement chain has a new head, fetch it
// from here", over HTTP and over libp2p gossip, as go-libipni and
// storetheindex speak them.
//
// # Model
//
// A [Message] is (Cid, Addrs, ExtraData, OrigPeer). [Message.EncodeCBOR]
// and [DecodeCBOR] are its CBOR tuple, the form on gossip and the default
// over HTTP:
//
//	83 | 84                          array of 3, or 4 when OrigPeer is set
//	d8 2a 58 <n+1> 00 <CID bytes>    Cid: tag 42 around bytes(0x00 ‖ CID)
//	8x <bytes>...                    Addrs: array of binary multiaddrs
//	4x <bytes>                       ExtraData: byte string, 0x40 when empty
//	6x <text>                        OrigPeer: base58 peer ID, only in a 4-tuple
//
// [Message.EncodeJSON] and [DecodeJSON] are the JSON object that
// encoding/json makes of go-libipni's message, addresses as base64 of their
// binary form, not as strings:
//
//	{"Cid":{"/":"bafy…"},"Addrs":["BH8AAAEGnZXgAw=="],"ExtraData":null,"OrigPeer":""}
//
// Both encoders write exactly what go-libipni writes. Both decoders are
// strict (shortest-form CBOR heads, canonical CIDs, valid multiaddrs and peer
// IDs, nothing after the message, no unknown JSON fields) and bounded by the
// reference's limits ([MaxAddrs], [MaxFieldLen], [MaxCIDLen],
// [MaxOrigPeerLen]) and by the input length, so that no field allocates more
// than the input holds. Like go-libipni they drop addresses whose protocol
// go-multiaddr does not know, instead of failing.
//
// The publisher of an HTTP announce is the /p2p/ part of its addresses
// ([Message.PublisherAddrInfo]); every address must carry the same one. The
// publisher of a gossip announce is the peer that signed the gossip message,
// or OrigPeer when set: an indexer that receives an announce over HTTP
// republishes it on gossip with OrigPeer = publisher (and, like go-libipni,
// with the addresses stripped of /p2p/ and without ExtraData).
//
// # Receiving
//
// A [Receiver] is an http.Handler for PUT /announce and PUT /ingest/announce
// (mount it at the root of the ingest listener, or at both paths). The body
// is CBOR unless the Content-Type media type is application/json. Answers:
//
//	204  accepted, or a repeat of a recent announce (dropped silently)
//	400  body that does not decode, no addresses, an address without /p2p/,
//	     several peer IDs; the text body names the problem
//	403  the WithAllow policy rejects the publisher
//	404  another path; 405 another method (Allow: PUT)
//	413  body over the limit (WithBodyLimit, 8 KiB by default)
//	429  the source is over its rate (WithSourceRate), or the publisher
//	     over its own (WithPublisherRate), or the Sink refuses the
//	     announce as the source's share is used up; with Retry-After.
//	     Without a Sink the body is not read.
//	503  the queue is full (Retry-After: 1), the Sink is full for everyone
//	     (with Retry-After), or the Receiver is closed
//
// A refused announce is never answered 204.
//
// [WithSourceRate] limits the announces of each source IP address (a token
// bucket per address, an IPv6 /64 counting as one), off by default. The
// source is the connection's remote address; X-Forwarded-For counts only
// with [WithTrustForwardedFor], behind a proxy that sets it. Trusted
// senders of many announces (an assigner forwarding to its indexers,
// local processes) are exempted with [WithSourceRateExempt]. The table of
// sources is bounded ([WithMaxSources]), so a flood of distinct sources
// costs bounded memory. [WithPeerRate] does the same on gossip, per
// propagating peer.
//
// With a [Sink] ([WithSink]; an ingest.Ingester makes one), announces go
// to the Sink as they arrive instead of to a queue, and the limits follow
// what an announce costs, which the Sink tells ([Class]): an announce of
// a publisher whose walk is already queued or running only marks it to be
// walked again and counts against no limit; one of a publisher that has
// verified counts against that publisher's rate ([WithPublisherRate]),
// whatever address it comes from, so that many publishers behind one
// address (a NAT, a provider with several peer IDs) do not share one
// budget; only publishers that never verified count against their
// source's rate. The Sink may refuse an announce for now ([*Refusal],
// [ErrBusy]), and the sender hears it. [Announce].From carries the source
// address for the Sink's own fair shares.
//
// A [Gossip] made with the Receiver feeds it the announces read from the
// topic /indexer/ingest/<network> and republishes its HTTP announces.
// Whatever the source, an announce goes through the policy, the IP filter
// ([WithFilterIPs], off by default), and de-duplication: an LRU of the last
// 64 (publisher, CID) pairs ([WithDedupeSize]) drops repeats, such as the
// same announce arriving over HTTP and gossip. Keying by publisher means one
// publisher cannot mute another by announcing its CID first.
//
// The consumer (the ingester) takes accepted announces with
// [Receiver.Next]. The queue between them is bounded ([WithQueueSize]) and
// never blocks the producers: when it is full the announce is dropped,
// counted in [Stats].Dropped, forgotten by the de-duplication so that a
// resend is accepted, and an HTTP sender gets 503. This is deliberate: an
// announce is a hint that the next one or a poll supersedes, and blocking
// would hold HTTP requests open and stall the single gossip reader (whose
// pubsub buffer then drops messages anyway, invisibly). Call
// [Receiver.Forget] to accept an announce again, e.g. after its sync failed.
//
// # Sending
//
// [Sender] is one method, Send(ctx, Message). [HTTPSender] PUTs the CBOR (or
// JSON) form to several URLs at once, adds /p2p/<publisher> to the
// addresses, and joins the errors of the URLs that failed; deadlines come
// from ctx. [Gossip.Send] publishes on the topic.
//
// # Lifecycle and concurrency
//
// Constructors start nothing. [Gossip.Run] starts GossipSub on the caller's
// host (with go-libipni's settings: flood publish, peer exchange, message
// ID = blake2b-256 of the data, so that IDs agree with reference peers),
// joins the topic, and delivers until ctx ends; it returns after its
// goroutines have exited. [Gossip.Ready] is closed once it has joined;
// Send and republishing fail with [ErrNotRunning] outside Run. The caller
// owns the host and closes it after Run returns. [Receiver.Close] and
// [HTTPSender.Close] are idempotent. Every type is safe for concurrent use.
//
// # Errors
//
// Decoders fail with errors wrapping [ErrMalformed]; encoders with
// [ErrInvalidMessage]; the publisher helpers with [ErrNoPublisher] or
// [ErrManyPublishers]; senders with [ErrRejected] (a non-2xx answer),
// [ErrNotRunning], [ErrClosed] or transport errors; a concurrent
// [Gossip.Run] with [ErrRunTwice]; constructors with [ErrInvalidOption].
// Test them with errors.Is. Nothing panics on any input.
//
// # Why the surface is this large
//
// announce exports more names than most packages (over 60, counting
// methods) because it holds the announce message and the three ends that
// move it, each with its own option type, as go-libipni's announce does:
// the [Message] with its codecs and limits (MaxAddrs, MaxCIDLen, ...);
// the [Receiver] ([Option]s, [Announce], [Class], [Source], [Refusal],
// [Stats], [Sink]); [Gossip] ([GossipOption]s, [GossipStats]); and
// [HTTPSender] ([HTTPSenderOption]s) behind the [Sender] interface; plus
// the sentinels. The HTTP sender could move to a subpackage, as
// go-libipni's httpsender is, should it grow.
package announce
