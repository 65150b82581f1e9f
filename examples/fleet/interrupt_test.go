package main

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// TestSimInterrupted: Ctrl-C during `fleet sim` (SIGINT to its process
// group, as a terminal sends it, so the git children of the repo
// generation get it too) is not an error: exit status 0, and no
// "signal: interrupt" lines of the children cut short.
func TestSimInterrupted(t *testing.T) {
	needGit(t)
	addr, prefix := testRedis(t)
	bin := proctest.Build(t, "./examples/fleet")
	cmd := exec.Command(bin, "sim", "-redis", addr, "-prefix", prefix, "-nodes", "3", "-repos", "2000", "-duration", "2m")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // generating the repos
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("fleet sim after Ctrl-C: %v, want status 0\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("fleet sim still runs a minute after Ctrl-C\n%s", out.String())
	}
	if s := out.String(); strings.Contains(s, "signal: interrupt") || strings.Contains(s, "signal: killed") {
		t.Errorf("output reports the interrupted children:\n%s", s)
	}
}
