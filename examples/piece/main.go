package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/piecenode"
)

func main() { cli.Main("piece", piecenode.Main) }
