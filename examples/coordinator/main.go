package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/coordcmd"
)

func main() { cli.Main("coordinator", coordcmd.Main) }
