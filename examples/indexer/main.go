package main

import (
	"github.com/indexkit/indexkit/examples/internal/indexernode"
	"github.com/indexkit/indexkit/internal/cli"
)

func main() { cli.Main("indexer", indexernode.Run) }
