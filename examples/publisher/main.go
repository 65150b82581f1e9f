package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/publishernode"
)

func main() { cli.Main("publisher", publishernode.Main) }
