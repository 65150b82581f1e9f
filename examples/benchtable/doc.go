// Command benchtable turns `go test -bench` output into a readable table
// that sets each store benchmark beside its raw-engine baseline.
//
//	go test -run '^$' -bench . ./store/... 2>&1 | go run ./examples/benchtable
//
// (`make demo` runs the short form of this.)
//
// # Input
//
// Benchmarks follow the naming convention
//
//	Benchmark<Op>/<param=value>/.../<impl>-<GOMAXPROCS>
//
// where impl is store (the indexkit backend) or raw (the raw engine measured
// in the same run, the baseline). The two results of one Op and parameters
// make one row. A benchmark whose last element is neither counts as a store
// result without a baseline. The "pkg:" line before each package's results
// names the table; the backend is the last element of the package path.
//
// Each result line is "N  X ns/op" followed by value-unit pairs, such as
// "312000 mh/s  4.1 cpu-s/Mmh  61.0 disk-B/mh  95.0 rss-B/mh". Results
// repeated with -count are averaged. A result line that log output split
// from its benchmark name is joined back. Other lines (PASS, ok, goos, logs)
// are ignored, except failures: when the input has "FAIL" or "--- FAIL:"
// lines, benchtable prints them, with the lines that explain them (the
// indented lines under them, panics, build errors), to standard error after
// the tables, and exits with status 1.
//
// # Output
//
// One table per package, one row per Op and parameters, with the columns
//
//   - store, raw: the rate of each side, its first metric whose unit ends
//     in "/s" (MB/s only when there is no other; ops/s from ns/op when there
//     is none);
//   - store/raw: the store rate divided by the raw rate (1.00 = as fast as
//     the raw engine);
//   - cpu store/raw: the store's "cpu-" metric divided by the raw one's,
//     when both sides report one in the same unit;
//   - disk-B/mh, size-B/mh, rss-B/mh, heap-B/mh: the store side's footprint, when
//     reported.
//
// A missing value is shown as "—". The program uses the standard library
// only.
package main
