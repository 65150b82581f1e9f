// Package indexercmd is the indexer program, examples/indexer, as a
// function: [Main] parses the command's flags and its JSON config file
// (-config) onto an indexernode.Config, binds the listeners with
// connection caps, exports Prometheus metrics from the node's hooks on
// -metrics, serves Go's /debug/pprof/ profiles on -pprof (loopback only,
// and to no web page), re-reads a keyspace layout on SIGHUP, and runs the
// node until its context ends.
//
// It logs one msg=listening name=<x> addr=<host:port> line per listener
// before msg=starting: the pool's process mode and the scale harness read
// them. examples/indexer's documentation is the manual of every flag.
//
// The node itself, with everything a program embedding one needs, is
// examples/indexernode; this package holds only what a command line
// adds to it. Only the mains (examples/indexer, the pool's process mode,
// the scale harness's child) import it.
package indexercmd
