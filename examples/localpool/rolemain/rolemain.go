// Package rolemain is the program's side of a pool's processes mode: it
// turns the process into one role of the pool when the pool started it
// as one, with the signals a program owns. A library role package takes
// no signals, so this lives apart from package localpool.
//
// A program that runs a pool with localpool.Config.Processes calls [Run]
// first thing in main, and a test binary in TestMain, so that the pool
// can start the same executable as each role:
//
//	func main() {
//		rolemain.Run() // returns at once unless started as a role
//		...
//	}
package rolemain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/indexkit/indexkit/examples/localpool"
)

// Run runs a role and exits when the process was started as one
// (os.Args[1] is localpool.RoleCommand); otherwise it returns at once.
// The role is localpool.ServeRole's, with the spec on standard input and
// the log on standard error; SIGINT and SIGTERM stop it gracefully, and
// SIGHUP has a sharded role load its layout file again. The exit status
// is 0 after a clean shutdown, 1 after an error, 2 for an unknown kind.
func Run() {
	if len(os.Args) < 2 || os.Args[1] != localpool.RoleCommand {
		return
	}
	// Take SIGHUP before anything can send one, so that it never kills
	// the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var kind string
	if len(os.Args) > 2 {
		kind = os.Args[2]
	}
	err := localpool.ServeRole(ctx, kind, os.Stdin, os.Stderr, hup)
	stop()
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "pool: %s %s: %v\n", localpool.RoleCommand, kind, err)
	if errors.Is(err, localpool.ErrUnknownKind) {
		os.Exit(2)
	}
	os.Exit(1)
}
