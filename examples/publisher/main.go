package main

import (
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/cli"
)

func main() { cli.Main("publisher", publishernode.Main) }
