// Package publishercmd is the examples/publisher program: [Main] maps its
// flags and its -config JSON file onto a publishernode.Config, binds one
// listener per publisher with the connection caps, logs where each
// listens and runs a publishernode.Node until its context ends. The
// manual of every flag and log line is examples/publisher's
// documentation.
//
// examples/publisher calls Main under cli.Main (signals and exit code),
// and the process mode of examples/localpool calls it for a publisher
// role; [LoadConfig] gives localpool the typed Config of a command line.
package publishercmd
