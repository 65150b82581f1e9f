// Package loopbench measures HTTP servers over loopback for the benchmarks
// of the find listeners' APIs (scatter/find, scatter/routing,
// examples/indexernode), so that they compare the same way.
//
// [Run] serves one handler and measures it alone. [Compare] measures a
// server as deployed (any URL on 127.0.0.1, with its own middleware,
// timeouts and connection caps) against a raw baseline served by [Serve],
// in the same run and in alternating turns, and reports the two ratios the
// targets are stated in (x-raw-rate, x-raw-p99). Clients are c goroutines,
// each with one keep-alive connection.
//
// It imports the standard library only.
package loopbench
