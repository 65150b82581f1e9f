package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMakeDemoCtrlC runs `make demo` in a pseudo-terminal (util-linux
// script) and types Ctrl-C into it once the pool shows: the terminal sends
// SIGINT to its foreground process group, as it does for a user. make
// must exit with the program's status, 0 for a complete end check (not
// 130: make dies of a SIGINT it gets itself), and leave no temporary
// directory behind (the built binary's nor the pool's).
func TestMakeDemoCtrlC(t *testing.T) {
	lane.Integration(t, "builds and runs the demo through make")
	for _, tool := range []string{"script", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (util-linux's script runs make in a pseudo-terminal): %v", tool, err)
			}
			t.Skipf("%s is missing (util-linux's script runs make in a pseudo-terminal): %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	flags := "--refresh 1s --publishers 1 --indexers 1 --store memory --entries 5 --interval 200ms --freeze-budget 0"
	cmd := exec.CommandContext(ctx, "script", "-qec", "make demo DEMO_FLAGS='"+flags+"'", "/dev/null")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	shows := regexp.MustCompile(`(?m)^── \d+s ── assigner up`)
	for !shows.MatchString(out.String()) {
		if ctx.Err() != nil {
			t.Fatalf("the pool did not show:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"building the demo: go build -o", "packages: a few minutes on 2 cores; later builds take seconds)", "it runs until Ctrl-C"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := io.WriteString(stdin, "\x03"); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	err = cmd.Wait()
	stdin.Close()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		t.Errorf("make demo exited %d after Ctrl-C, want 0 (the program's status); output:\n%s", ee.ExitCode(), out.String())
	case err != nil:
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "complete after") {
		t.Errorf("no complete end check in the output:\n%s", out.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
}

// TestBinaryStdoutGone: the binary whose stdout reader goes away (the
// pipe's read end closed, as when tee dies of Ctrl-C) keeps running, and a
// SIGINT then makes it run its end check and exit with its status, not
// die of SIGPIPE, and remove its temporary directory.
func TestBinaryStdoutGone(t *testing.T) {
	lane.Integration(t, "builds and runs the binary")
	bin := proctest.Build(t, "./examples/pool")
	tmp := t.TempDir()
	cmd := exec.Command(bin, "--refresh", "200ms", "--publishers", "1", "--indexers", "1", "--store", "memory",
		"--entries", "5", "--interval", "200ms", "--freeze-budget", "0")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "assigner up") {
	}
	stdout.Close()              // the reader goes away
	time.Sleep(2 * time.Second) // views written into the closed pipe
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("the program is gone before SIGINT: %v\nstderr:\n%s", err, stderr.String())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no exit 2 minutes after SIGINT\nstderr:\n%s", stderr.String())
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 0 {
		t.Errorf("exit: %v (signaled %v), want status 0\nstderr:\n%s", cmd.ProcessState, ws.Signaled(), stderr.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
}
