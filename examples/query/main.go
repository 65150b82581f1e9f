package main

import (
	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/internal/cli"
)

func main() { cli.Main("query", querynode.Main) }
