package assignercmd_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/assignercmd"
)

// A listener whose port is taken ends Run at start with an error naming
// the flag, the address and the cause; no panic, nothing left running.
func TestStartPortInUse(t *testing.T) {
	for _, flag := range []string{"-listen", "-state-listen", "-metrics", "-p2p"} {
		t.Run(flag, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			busy := ln.Addr().String()
			value, want := busy, flag+" "+busy
			if flag == "-p2p" {
				host, port, _ := net.SplitHostPort(busy)
				value = "/ip4/" + host + "/tcp/" + port
				want = "-p2p " + value
			}
			args := []string{"-indexer", "admin=http://127.0.0.1:1,find=http://127.0.0.1:2,ingest=http://127.0.0.1:3",
				"-listen", "127.0.0.1:0", "-state-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-p2p", "none", flag, value}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			err = func() error {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Run panicked: %v", p)
					}
				}()
				return assignercmd.Main(ctx, args, &stderr)
			}()
			if err == nil || ctx.Err() != nil {
				t.Fatalf("Run = %v (context: %v), want a start-up error\n%s", err, ctx.Err(), stderr.String())
			}
			if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "address already in use") {
				t.Errorf("Run: %v, want %q and the cause", err, want)
			}
		})
	}
}
