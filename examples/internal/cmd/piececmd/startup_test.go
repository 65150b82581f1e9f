package piececmd_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/piececmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
)

// runFails runs the piece program in this process with args, expects it
// to fail at start, and returns its error. A panic fails the test.
func runFails(t *testing.T, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	err := func() error {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Run panicked: %v\n%s", p, stderr.String())
			}
		}()
		return piececmd.Main(ctx, args, &stderr)
	}()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Run(%q) = %v (context: %v), want a start-up error\n%s", args, err, ctx.Err(), stderr.String())
	}
	return err
}

func TestStartBadKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("garbage\x00\xff"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := runFails(t, "-listen", "127.0.0.1:0", "-providers-url", "", "-dir", dir)
	if want := "-key: piece: key file " + key + " holds no libp2p private key"; !strings.Contains(err.Error(), want) {
		t.Errorf("Run: %v, want %q", err, want)
	}
}

func TestStartPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	err = runFails(t, "-listen", busy, "-providers-url", "", "-dir", t.TempDir())
	if want := "-listen " + busy + ": listen tcp " + busy + ": bind: address already in use"; err.Error() != want {
		t.Errorf("Run: %v, want %q", err, want)
	}
}

// With the Redis store the walker state is a LevelDB in -dir: a second
// sampler on the same -dir fails on its lock.
func TestStartDataDirLocked(t *testing.T) {
	addr := redistest.Addr()
	rdb := redistest.Client(t, addr)
	prefix := redistest.Prefix(t, rdb, "piece-lock")
	dir := t.TempDir()
	args := []string{"-listen", "127.0.0.1:0", "-providers-url", "", "-store", "redis", "-redis", addr,
		"-redis-prefix", prefix, "-dir", dir}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	tap := logtap.New(io.Discard)
	done := make(chan error, 1)
	go func() {
		done <- piececmd.Main(rctx, args, tap)
		tap.Close()
	}()
	if _, err := tap.WaitMsg(ctx, "starting"); err != nil {
		stop()
		t.Fatalf("first sampler: %v (Run: %v)", err, <-done)
	}
	err := runFails(t, args...)
	want := "-dir: walker state " + filepath.Join(dir, "walk") + ": "
	if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, "locked: is another piece sampler running on this -dir?") {
		t.Errorf("second sampler: %v, want %q… and the lock named", err, want)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("first sampler: %v", err)
	}
}

// TestHelp: -h prints the usage and what the program does, and is no
// error but flag.ErrHelp (exit status 0).
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	err := piececmd.Main(t.Context(), []string{"-h"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Main -h: %v, want flag.ErrHelp", err)
	}
	if want := "usage: piece [flags]\nWalks IPNI publishers' chains and serves signed samples"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("-h prints %q..., want %q first", out.String()[:min(len(out.String()), 120)], want)
	}
}
