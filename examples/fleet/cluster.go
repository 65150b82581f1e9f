package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/internal/freeport"
	"github.com/indexkit/indexkit/internal/logfields"
)

// redisServer is a redis-server process started on a free loopback port,
// without persistence.
type redisServer struct {
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts redis-server on a free 127.0.0.1 port, working in dir,
// and waits until it answers PING.
func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	var errs []error
	for range 3 { // the free port may be taken between Close and the server's bind
		port, err := freeport.Pick(1)
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "",
			"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "warning")
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start redis-server: %w", err)
		}
		s := &redisServer{Addr: addr, cmd: cmd, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(s.done) }()
		if err := s.waitReady(ctx); err != nil {
			s.Stop()
			errs = append(errs, fmt.Errorf("redis-server on %s: %w: %s", addr, err, strings.TrimSpace(out.String())))
			continue
		}
		return s, nil
	}
	return nil, errors.Join(errs...)
}

func (s *redisServer) waitReady(ctx context.Context) error {
	rdb := goredis.NewClient(&goredis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := rdb.Ping(pctx).Err()
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return fmt.Errorf("no answer to PING within 5s: %w", err)
		}
		select {
		case <-s.done:
			return errors.New("exited")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the server by PID: SIGTERM, then SIGKILL after 5s.
func (s *redisServer) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// randomPrefix returns a fresh key prefix under base.
func randomPrefix(base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return base + hex.EncodeToString(b[:]) + ":"
}

// lockedBuffer is a goroutine-safe buffer for a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// event is one log line of a child node.
type event struct {
	Node   string
	At     time.Time // when the parent read it
	Fields map[string]string
}

// child is a fleet node started as a child process.
type child struct {
	Name string
	Addr string // HTTP address
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	tail *tailBuffer
}

// startChild runs bin with args (a `fleet node` command line) as node
// name, sends each of its log lines to onEvent (which must not block for
// long), echoes them to echo when not nil, and waits for its HTTP
// address.
func startChild(ctx context.Context, bin, name string, args []string, onEvent func(event), echo io.Writer) (*child, error) {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	c := &child{Name: name, cmd: cmd, done: make(chan struct{}), tail: &tailBuffer{max: 40}}
	addr := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			c.tail.add(line)
			if echo != nil {
				fmt.Fprintf(echo, "[%s] %s\n", name, line)
			}
			f := logfields.Parse(line)
			if f["msg"] == "listening" && f["name"] == "http" {
				select {
				case addr <- f["addr"]:
				default:
				}
			}
			if onEvent != nil {
				onEvent(event{Node: name, At: time.Now(), Fields: f})
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-read
		_ = cmd.Wait()
		close(c.done)
	}()
	select {
	case c.Addr = <-addr:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("node %s exited before listening:\n%s", name, c.tail)
	case <-time.After(30 * time.Second):
		c.Kill()
		return nil, fmt.Errorf("node %s: no listening line within 30s:\n%s", name, c.tail)
	case <-ctx.Done():
		c.Kill()
		return nil, ctx.Err()
	}
}

// Kill sends SIGKILL to the child by PID and waits for it.
func (c *child) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// Stop sends SIGTERM and waits up to timeout for a clean exit, then kills
// the child. It returns the exit error (nil for status 0).
func (c *child) Stop(timeout time.Duration) error {
	if !c.Exited() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-c.done:
		if c.cmd.ProcessState.Success() {
			return nil
		}
		return fmt.Errorf("node %s: %s:\n%s", c.Name, c.cmd.ProcessState, c.tail)
	case <-time.After(timeout):
		c.Kill()
		return fmt.Errorf("node %s did not exit within %v of SIGTERM; killed", c.Name, timeout)
	}
}

// Exited reports whether the child has exited.
func (c *child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// status fetches the child's GET /status.
func (c *child) status(ctx context.Context, hc *http.Client) (fleetnode.Status, error) {
	var st fleetnode.Status
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Addr+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /status of %s: %s", c.Name, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// tailBuffer keeps the last max lines.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
