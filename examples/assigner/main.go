package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/assignercmd"
)

func main() { cli.Main("assigner", assignercmd.Main) }
