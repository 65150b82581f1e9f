package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/publishercmd"
)

func main() { cli.Main("publisher", publishercmd.Main) }
