package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/examples/internal/cli"
)

func main() {
	// go-redis logs dial failures of its own on stderr, ahead of the
	// errors the fleet reports: silence it.
	goredis.SetLogger(quietRedis{})
	cli.Main("fleet", run)
}

// quietRedis is a go-redis logger that drops every line.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

const usage = `usage: fleet <command> [flags]

commands:
  node   run one fleet node (see fleet node -h)
  demo   run 3 nodes over 50 generated repos and show ownership and routing
  sim    run N nodes over 500 generated repos, kill one (twice: without and
         with snapshots), report the figures
  set    change a running fleet's settings (-max-bids N, -rehydrate on|off) in Redis or etcd
`

// descriptions are what each command does, the line its -h prints first
// after its usage.
var descriptions = map[string]string{
	"node": "Runs one fleet node: it bids for repos of the catalog within its memory budget, indexes them and answers searches",
	"demo": "Runs 3 nodes over 50 generated repos and shows ownership and routing",
	"sim":  "Runs N nodes over 500 generated repos, kills one, and reports how fast the others cover its repos (by default twice: cloning, then loading snapshots)",
	"set":  "Changes a running fleet's settings (-max-bids N, -rehydrate on|off) in Redis or etcd; every node applies them at its next heartbeat",
}

// describe makes fs's -h print the usage and description of command name
// before its flags.
func describe(fs *flag.FlagSet, name string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fleet %s [flags]\n%s. Flags:\n", name, descriptions[name])
		fs.PrintDefaults()
	}
}

// run dispatches the subcommand. An interrupt (SIGINT or SIGTERM cancel
// ctx, cli.Main) is not an error: what it cut short (git children killed
// by the same Ctrl-C, requests canceled) is not reported, and the status
// is 0.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	err := dispatch(ctx, args, stderr)
	if err != nil && ctx.Err() != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "fleet: interrupted")
		return nil
	}
	return err
}

// dispatch runs the subcommand args[0].
func dispatch(ctx context.Context, args []string, stderr io.Writer) error {
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
