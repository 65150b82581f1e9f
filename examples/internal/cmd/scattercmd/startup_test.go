package scattercmd_test

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/scattercmd"
)

// A listener whose port is taken ends Run at start with an error naming
// the flag, the address and the cause.
func TestStartPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, flag := range []string{"-listen", "-metrics"} {
		t.Run(flag, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			err := scattercmd.Main(ctx, []string{"-backends", "http://127.0.0.1:1", "-listen", "127.0.0.1:0",
				"-metrics", "127.0.0.1:0", flag, busy}, &stderr)
			want := flag + " " + busy + ": listen tcp " + busy + ": bind: address already in use"
			if err == nil || ctx.Err() != nil || err.Error() != want {
				t.Errorf("Run = %v (context: %v), want %q\n%s", err, ctx.Err(), want, stderr.String())
			}
		})
	}
}
