// Package piececmd is the examples/piece program: [Main] maps its flags
// onto a piecenode.Config, opens the piece store (memory or Redis), the
// walker state in -dir and the signing key (-key), binds -listen with the
// connection caps and runs a piecenode.Sampler until its context ends.
// The manual of every flag, the state it keeps and the log lines is
// examples/piece's documentation.
//
// examples/piece calls Main under cli.Main (signals and exit code), and
// the process mode of examples/localpool calls it for the piece role.
package piececmd
