// Package localonly keeps web pages away from the HTTP APIs that are open
// without a token on loopback: the indexer's admin API (ingest/admin),
// a query node's write API (scatter/keyspace/querynode) and the generated
// publisher's POST /halt. Listening on 127.0.0.1 keeps other machines
// out, but not the browser of this machine: a page at any origin can
// send a no-cors POST to 127.0.0.1 (it cannot read the answer, but the
// write happens), and a page whose name an attacker re-points at
// 127.0.0.1 after it has loaded (DNS rebinding) can send any request,
// PUT included, and read the answer, since it is then same-origin with
// the API.
//
// # Model
//
// A [Guard] lets a request through only when
//
//   - its Host is a loopback literal (127.0.0.0/8, [::1], an IPv4-mapped
//     loopback), "localhost", or one of the names the Guard was made
//     with ([New]; the nodes' -admin-hosts and -shard-hosts), with any
//     port: a rebound page sends its own name ("rebind.evil.example:3002"),
//     which is none of these. A request without a Host is refused too.
//   - it carries no Origin header and no Sec-Fetch-Site other than
//     "none": browsers send Origin with every cross-origin POST and PUT
//     (no-cors included) and with every same-origin one, and
//     Sec-Fetch-Site with every request a page makes (a no-cors GET, an
//     image, has no Origin but "cross-site"), while a user typing the
//     URL sends "none". Programs (curl, Go's http.Client, the assigner,
//     the ingest nodes' writers) send neither. The API serves no page of
//     its own, so no page has a reason to call it.
//
// A foreign Host is answered 421 Misdirected Request (RFC 9110, 15.5.20:
// the server is unwilling to answer for that authority), which is what
// it is: the node does not answer for that name, whoever asks, and the
// status tells an operator behind a proxy that the name is the problem. A
// request from a page is answered 403 Forbidden. Both have a text body
// naming the problem and the way out ([Refusal]).
//
// Only APIs without a token use a Guard. With a token the API stays as it
// was: a page cannot send the token (a no-cors request carries no
// Authorization header, and a CORS request with one needs a preflight
// these APIs do not grant), a rebound page does not know it, and a node
// with a token may listen off loopback behind any name, so its Host is
// not checked. A nil *Guard lets everything through, so that an API
// holds one Guard whether or not it has a token.
//
// # Concurrency and errors
//
// A Guard is immutable and safe for concurrent use. [New] fails with an
// error naming the entry for a host that is empty or has a port, a
// scheme, a path or a wildcard. [Guard.Check] returns a *[Refusal] that
// wraps [ErrForeignHost] or [ErrBrowser].
//
// It imports the standard library only.
package localonly
