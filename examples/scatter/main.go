package main

import (
	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/internal/cli"
)

func main() { cli.Main("scatter", scatternode.Main) }
