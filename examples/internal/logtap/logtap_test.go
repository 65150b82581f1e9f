package logtap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAddrAndMsg(t *testing.T) {
	var out strings.Builder
	tap := New(&out)
	log := slog.New(slog.NewTextHandler(tap, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	var addr string
	var aerr error
	wg.Go(func() { addr, aerr = tap.Addr(ctx, "admin") }) // waits before the line is written
	log.Info("listening", "name", "find", "addr", "127.0.0.1:1")
	log.Info("listening", "name", "admin", "addr", "127.0.0.1:2")
	log.Info("starting", "id", "12D3", "dir", "/tmp/with space")
	wg.Wait()
	if aerr != nil || addr != "127.0.0.1:2" {
		t.Fatalf("Addr(admin) = %q, %v; want 127.0.0.1:2", addr, aerr)
	}
	if a, err := tap.Addr(ctx, "find"); err != nil || a != "127.0.0.1:1" {
		t.Fatalf("Addr(find) = %q, %v", a, err)
	}
	f, err := tap.WaitMsg(ctx, "starting")
	if err != nil || f["id"] != "12D3" || f["dir"] != "/tmp/with space" {
		t.Fatalf("WaitMsg(starting) = %v, %v", f, err)
	}
	if got := strings.Count(out.String(), "\n"); got != 3 {
		t.Fatalf("next writer got %d lines, want 3:\n%s", got, out.String())
	}
	if n := len(tap.Lines()); n != 3 {
		t.Fatalf("Lines: %d, want 3", n)
	}
}

func TestClose(t *testing.T) {
	tap := New(nil)
	fmt.Fprint(tap, "msg=listening name=x") // no newline: Close completes it
	errc := make(chan error, 1)
	go func() {
		_, err := tap.Addr(context.Background(), "y")
		errc <- err
	}()
	tap.Close()
	tap.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "name=y") {
			t.Fatalf("Addr after Close: %v, want ErrClosed naming name=y", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Addr did not return after Close")
	}
	if _, err := tap.WaitMsg(context.Background(), "listening"); err != nil {
		t.Fatalf("the partial last line was not kept: %v", err)
	}
}

func TestContextDone(t *testing.T) {
	tap := New(nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tap.WaitMsg(ctx, "starting"); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitMsg on a done context: %v", err)
	}
}

func TestManyLines(t *testing.T) {
	tap := New(nil)
	for i := range 3 * maxLines {
		fmt.Fprintf(tap, "msg=line i=%d\n", i)
	}
	lines := tap.Lines()
	if len(lines) > keepFirst+maxLines {
		t.Fatalf("kept %d lines, bound %d", len(lines), keepFirst+maxLines)
	}
	if lines[0] != "msg=line i=0" || lines[len(lines)-1] != fmt.Sprintf("msg=line i=%d", 3*maxLines-1) {
		t.Fatalf("first %q, last %q", lines[0], lines[len(lines)-1])
	}
}
