package main

import (
	"github.com/indexkit/indexkit/examples/piecenode"
	"github.com/indexkit/indexkit/internal/cli"
)

func main() { cli.Main("piece", piecenode.Main) }
