package main

import (
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/piececmd"
)

func main() { cli.Main("piece", piececmd.Main) }
