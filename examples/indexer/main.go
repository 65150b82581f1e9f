package main

import (
	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
)

func main() { cli.Main("indexer", indexernode.Main) }
