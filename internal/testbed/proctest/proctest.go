package proctest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/logfields"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// ModulePath is the root module, whose packages [Build] builds.
const ModulePath = "github.com/indexkit/indexkit"

// DefaultTimeout bounds the waits of [Proc.WaitMsg], [Proc.Addr] and
// [Proc.Stop], and each step of the cleanup that [Start] registers.
const DefaultTimeout = 60 * time.Second

// buildTimeout bounds a go build.
const buildTimeout = 5 * time.Minute

// goTool returns the go command of the toolchain running the test, or the
// one on PATH.
func goTool(t testing.TB) string {
	t.Helper()
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err == nil {
		return g
	}
	g, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return g
}

// Build builds pkg, a package of the root module given by import path
// (github.com/indexkit/indexkit/examples/indexer) or relative to the root
// directory (./examples/indexer), and returns the binary's path. The build
// runs in the root module's directory, as `go list -m` reports it from the
// working directory (the root itself, or a nested module that requires it
// with a replace), with -race when the test binary runs with the race
// detector.
//
// The binary lives in a directory of its own under the user's temporary
// directory, named after the module root, pkg and -race, and shared by
// every test and test process that builds it: go build does not link
// again a binary that is up to date (about 1 s instead of 5 to 8 for a
// node), and a lock on the directory lets one build at a time write it.
// Tests run the binary and must not modify or move it.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	lane.Integration(t, "builds and starts "+pkg)
	g := goTool(t)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, g, "list", "-m", "-f", "{{.Dir}}", ModulePath).Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = ee.Stderr
		}
		t.Fatalf("go list -m %s: %v\n%s", ModulePath, err, out)
	}
	dir, unlock := buildDir(t, root, pkg)
	defer unlock()
	bin := filepath.Join(dir, path.Base(pkg))
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, g, append(args, pkg)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, root, err, out)
	}
	return bin
}

// buildDir returns the directory [Build] writes pkg's binary to, locked
// against other builds of it in this and other processes until unlock.
func buildDir(t testing.TB, root, pkg string) (dir string, unlock func()) {
	t.Helper()
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00race=%v", root, pkg, raceEnabled)))
	dir = filepath.Join(os.TempDir(), fmt.Sprintf("indexkit-proctest-%d", os.Getuid()), hex.EncodeToString(key[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("build directory: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("build lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("build lock: %v", err)
	}
	return dir, func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// Proc is a running process started by [Start].
type Proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and its output is read
	err    error         // Wait's result, once exited is closed

	mu      sync.Mutex
	buf     []byte        // the output after the last newline
	lines   []string      // complete lines of output
	changed chan struct{} // closed and replaced at each new line
}

// output is the writer of a Proc's standard output and error.
type output Proc

func (o *output) Write(b []byte) (int, error) {
	p := (*Proc)(o)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.addLine(string(p.buf[:i]))
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// addLine appends a line; p.mu is held.
func (p *Proc) addLine(line string) {
	p.lines = append(p.lines, line)
	close(p.changed)
	p.changed = make(chan struct{})
}

// Start runs bin with args, collecting its standard output and error, and
// registers a cleanup that stops it by PID if it is still running when
// the test ends (SIGTERM, then SIGKILL after [DefaultTimeout], which fails
// the test) and logs its output if the test failed.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	lane.Integration(t, "starts "+filepath.Base(bin)+" as a process")
	p := &Proc{t: t, cmd: exec.Command(bin, args...), exited: make(chan struct{}), changed: make(chan struct{})}
	p.cmd.Stdout = (*output)(p)
	p.cmd.Stderr = (*output)(p)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait() // returns once the output is all written
		p.mu.Lock()
		if len(p.buf) > 0 {
			p.addLine(string(p.buf))
			p.buf = nil
		}
		p.mu.Unlock()
		p.err = err
		close(p.exited)
	}()
	t.Cleanup(func() {
		if !p.hasExited() {
			_ = p.signal(syscall.SIGTERM)
			if !p.waitExited(DefaultTimeout) {
				t.Errorf("%s (pid %d) did not exit within %v of SIGTERM; killing it", p.name(), p.Pid(), DefaultTimeout)
				_ = p.signal(syscall.SIGKILL)
				if !p.waitExited(DefaultTimeout) {
					t.Errorf("%s (pid %d) did not exit after SIGKILL", p.name(), p.Pid())
				}
			}
		}
		if t.Failed() {
			t.Logf("output of %s (pid %d):\n%s", p.name(), p.Pid(), p.Output())
		}
	})
	return p
}

// name is the command line, for messages.
func (p *Proc) name() string { return strings.Join(p.cmd.Args, " ") }

// Pid returns the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output returns everything the process has written so far on its
// standard output and error.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.Write(p.buf)
	return b.String()
}

func (p *Proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *Proc) waitExited(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// signal sends sig to the process by PID, unless it has exited.
func (p *Proc) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Signal sends sig to the process by PID, failing the test on error.
func (p *Proc) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.signal(sig); err != nil {
		p.t.Fatalf("signal %v to %s (pid %d): %v", sig, p.name(), p.Pid(), err)
	}
}

// exitCode is the exit code of the process, once exited; it fails the
// test if Wait failed otherwise.
func (p *Proc) exitCode() int {
	p.t.Helper()
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode() // -1 if killed by a signal
	}
	p.t.Fatalf("waiting for %s: %v", p.name(), p.err)
	return -1
}

// Wait waits at most d for the process to exit and returns its exit code
// (-1 if a signal killed it); it fails the test if the process is still
// running after d.
func (p *Proc) Wait(d time.Duration) int {
	p.t.Helper()
	if !p.waitExited(d) {
		p.t.Fatalf("%s (pid %d) did not exit within %v; output:\n%s", p.name(), p.Pid(), d, p.Output())
	}
	return p.exitCode()
}

// Stop sends SIGTERM and waits at most [DefaultTimeout] for the process
// to exit, and returns its exit code (-1 if a signal killed it). If it has
// not exited by then, Stop kills it with SIGKILL and fails the test.
func (p *Proc) Stop() int {
	p.t.Helper()
	p.Signal(syscall.SIGTERM)
	if !p.waitExited(DefaultTimeout) {
		p.t.Errorf("%s (pid %d) did not exit within %v of SIGTERM; killing it; output:\n%s",
			p.name(), p.Pid(), DefaultTimeout, p.Output())
		_ = p.signal(syscall.SIGKILL)
		p.waitExited(DefaultTimeout)
		p.t.FailNow()
	}
	return p.exitCode()
}

// waitLine returns the index of the first line from index from on for
// which match holds, waiting at most d for it; it fails the test, saying
// it waited for what, after d or once the process has exited without
// writing such a line.
func (p *Proc) waitLine(from int, d time.Duration, what string, match func(string) bool) int {
	p.t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		exited := p.hasExited() // before reading: all output is in then
		p.mu.Lock()
		for i := from; i < len(p.lines); i++ {
			if match(p.lines[i]) {
				p.mu.Unlock()
				return i
			}
		}
		changed := p.changed
		p.mu.Unlock()
		if exited {
			p.t.Fatalf("%s (pid %d) exited (%v) without writing %s; output:\n%s", p.name(), p.Pid(), p.err, what, p.Output())
		}
		select {
		case <-changed:
		case <-p.exited:
		case <-deadline.C:
			p.t.Fatalf("%s (pid %d) wrote no %s within %v; output:\n%s", p.name(), p.Pid(), what, d, p.Output())
		}
	}
}

// WaitLine returns the submatches of re in the first line, from index
// *from on, that matches it, and moves *from past that line; it waits at
// most d, and fails the test after d or if the process exits without
// writing such a line. Successive calls with the same from see lines in
// order.
func (p *Proc) WaitLine(from *int, re string, d time.Duration) []string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	var m []string
	i := p.waitLine(*from, d, fmt.Sprintf("line matching %q", re), func(line string) bool {
		m = rx.FindStringSubmatch(line)
		return m != nil
	})
	*from = i + 1
	return m
}

// WaitMsg waits at most [DefaultTimeout] for a slog text line with
// msg=<msg> and returns its key=value pairs; it fails the test after that
// or if the process exits first.
func (p *Proc) WaitMsg(msg string) map[string]string {
	p.t.Helper()
	var f map[string]string
	p.waitLine(0, DefaultTimeout, "msg="+msg, func(line string) bool {
		f = Fields(line)
		return f["msg"] == msg
	})
	return f
}

// Addr waits at most [DefaultTimeout] for the first line
// msg=listening name=<name> addr=<address> and returns the address; it
// fails the test after that or if the process exits first.
func (p *Proc) Addr(name string) string {
	p.t.Helper()
	var addr string
	p.waitLine(0, DefaultTimeout, "msg=listening name="+name, func(line string) bool {
		f := Fields(line)
		addr = f["addr"]
		return f["msg"] == "listening" && f["name"] == name && addr != ""
	})
	return addr
}

// Fields parses the key=value pairs of a slog text line, unquoting quoted
// values (internal/logfields).
func Fields(line string) map[string]string { return logfields.Parse(line) }

// SlowBody opens a connection to addr and PUTs path with a chunked body
// that never ends, one byte every 20 ms, until the test ends: a slow
// client, for tests that a server's deadlines and shutdown do not wait on
// it.
func SlowBody(t testing.TB, addr, path string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); c.Close() })
	if _, err := fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := io.WriteString(c, "1\r\nx\r\n"); err != nil {
				return
			}
		}
	}()
}
