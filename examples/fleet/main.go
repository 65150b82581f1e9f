package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/indexkit/indexkit/examples/internal/cli"
)

func main() { cli.Main("fleet", run) }

const usage = `usage: fleet <command> [flags]

commands:
  node   run one fleet node (see fleet node -h)
  demo   run 3 nodes over 50 generated repos and show ownership and routing
  sim    run N nodes over 500 generated repos, kill one, report the figures
  set    change a running fleet's settings (-max-bids N) in Redis or etcd
`

// run dispatches the subcommand.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "node":
		return runNode(ctx, args[1:], stderr)
	case "demo":
		return runDemo(ctx, args[1:], stderr)
	case "sim":
		return runSim(ctx, args[1:], stderr)
	case "set":
		return runSet(ctx, args[1:], stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
