package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/indexercmd"
)

func main() { cli.Main("indexer", indexercmd.Main) }
