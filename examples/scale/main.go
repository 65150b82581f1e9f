package main

import (
	"context"
	"io"
	"os"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/scale"
)

func main() {
	cli.Main("scale", func(ctx context.Context, args []string, stderr io.Writer) error {
		return scale.Main(ctx, args, os.Stdout, stderr)
	})
}
