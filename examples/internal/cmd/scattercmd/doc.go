// Package scattercmd is the examples/scatter program: [Main] maps its
// command line (flags, and the -config or -layout file) onto a
// scatternode.Config, binds the find API, /metrics and -pprof listeners
// with the connection caps, exports the front end's hooks and stats as
// Prometheus metrics on a registry of its own, and re-reads the config or
// layout file on SIGHUP (scatternode.Scatter.Reload). The command's
// documentation (go doc ./examples/scatter) is the manual of every flag,
// the file formats, the metrics and the logs.
//
// Main runs until its context is done, logging to the writer it is given:
// one msg=listening name=<x> addr=<host:port> line per listener, then
// msg=starting, so that a caller that passes 127.0.0.1:0 learns the ports
// (examples/internal/logtap, internal/testbed/proctest). examples/scatter
// and the process mode of examples/localpool call it.
//
// Main takes SIGHUP for the whole process while it runs: run one Main
// with a config or layout file per process.
package scattercmd
