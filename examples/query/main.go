package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/querycmd"
)

func main() { cli.Main("query", querycmd.Main) }
