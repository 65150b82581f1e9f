// Package assignercmd is the examples/assigner program: [Main] maps its
// flags and its -config JSON file onto an assignernode.Config, resolves
// the admin token (-admin-token, -admin-token-file or
// $INDEXKIT_ADMIN_TOKEN), binds the announce, state and /metrics
// listeners with the connection caps, starts the libp2p hosts of -p2p and
// -p2p-verify (their dials through the gater of the role's dial policy),
// and runs an assignernode.Assigner until its context ends. Its
// Prometheus metrics, in a registry of its own served on -metrics, are
// fed by the role's hooks and read its service's statistics at scrape
// time. The manual of every flag, key and log line is examples/assigner's
// documentation.
//
// Main logs each listener as msg=listening name=<x> addr=<host:port>
// (and name=p2p per libp2p address) before msg=starting, so a caller that
// passes 127.0.0.1:0 learns the ports from those lines. examples/assigner
// calls it under cli.Main (signals and exit code), and the process mode
// of examples/localpool calls it for the assigner role.
package assignercmd
