// Package querycmd is the examples/query program: [Main] maps its flags
// onto a querynode.Config (the token from -token-file or
// $INDEXKIT_SHARD_TOKEN, [EnvToken]), refuses a shard API off loopback
// without a token, binds the listener with the connection caps (and a
// loopback -pprof listener for Go's profiles), runs the node until its
// context is done, and re-reads the layout file on SIGHUP
// (querynode.Node.ReloadLayout). The command's documentation (go doc
// ./examples/query) is the manual of every flag.
//
// Main logs to the writer it is given: msg=listening name=query
// addr=<host:port> (and name=pprof) before msg=starting, so that a caller
// that passes 127.0.0.1:0 learns the port. examples/query, the process
// mode of examples/localpool and the scale harness's children call it.
// Main takes SIGHUP for the whole process while it runs.
package querycmd
