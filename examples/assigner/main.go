package main

import (
	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
)

func main() { cli.Main("assigner", assignernode.Main) }
