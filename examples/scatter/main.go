package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/scatternode"
)

func main() { cli.Main("scatter", scatternode.Main) }
