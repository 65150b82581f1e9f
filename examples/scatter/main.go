package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/scattercmd"
)

func main() { cli.Main("scatter", scattercmd.Main) }
