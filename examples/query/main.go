package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/querynode"
)

func main() { cli.Main("query", querynode.Main) }
