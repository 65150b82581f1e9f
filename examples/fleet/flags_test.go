package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"123": 123, "2KiB": 2048, "3MiB": 3 << 20, "1GiB": 1 << 30, "5B": 5} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1TB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q): no error", in)
		}
	}
}

// TestHelp: `fleet <cmd> -h` prints the command's usage and what it does,
// and is no error but flag.ErrHelp (exit status 0).
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"node", "demo", "sim", "set"} {
		var out bytes.Buffer
		if err := run(t.Context(), []string{cmd, "-h"}, &out); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("fleet %s -h: %v, want flag.ErrHelp", cmd, err)
		}
		want := "usage: fleet " + cmd + " [flags]\n" + descriptions[cmd] + ". Flags:\n"
		if descriptions[cmd] == "" || !strings.HasPrefix(out.String(), want) {
			t.Errorf("fleet %s -h prints %q..., want %q first", cmd, out.String()[:min(len(out.String()), 120)], want)
		}
	}
}
