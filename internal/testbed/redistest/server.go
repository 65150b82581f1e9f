package redistest

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/lane"

	"github.com/indexkit/indexkit/internal/freeport"
)

// DefaultStartTimeout bounds how long [StartServer] and [Server.Start] wait
// for a started redis-server to answer PING.
const DefaultStartTimeout = 5 * time.Second

// Server is a redis-server process of one test's own, listening on
// 127.0.0.1 on a port that stays the same across restarts. Its methods must
// be called from the test's goroutine.
type Server struct {
	tb      testing.TB
	bin     string
	port    int
	args    []string
	timeout time.Duration

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been reaped
	out  *syncBuffer
}

// Option configures [StartServer].
type Option func(*serverConfig)

type serverConfig struct {
	aof     bool
	dir     string
	timeout time.Duration
}

// WithAOF makes the server persistent: appendonly yes and appendfsync
// always, in dir (a temporary directory of the test when dir is ""), so
// that after [Server.Kill] and [Server.Start] it comes back with every write
// it acknowledged. Without it the server keeps nothing on disk.
func WithAOF(dir string) Option {
	return func(c *serverConfig) { c.aof, c.dir = true, dir }
}

// WithStartTimeout sets how long a start waits for the server to answer
// PING (default [DefaultStartTimeout]); a persistent server answers LOADING
// until it has read its append-only file.
func WithStartTimeout(d time.Duration) Option {
	return func(c *serverConfig) { c.timeout = d }
}

// StartServer starts redis-server on a free 127.0.0.1 port, in a temporary
// directory of the test, and waits until it answers PING. The server is
// killed (SIGKILL, by PID) and reaped at the end of the test. Without the
// redis-server binary on PATH it calls [Unavailable]; a server that does
// not come up fails the test.
func StartServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	lane.Integration(tb, "starts a redis-server of its own")
	cfg := serverConfig{timeout: DefaultStartTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(tb, "redis-server binary not found: %v", err)
	}
	if cfg.dir == "" {
		cfg.dir = tb.TempDir()
	}
	s := &Server{tb: tb, bin: bin, timeout: cfg.timeout}
	tb.Cleanup(s.Kill)
	// A port free when picked may be bound by another test's server before
	// this one binds it: then pick another.
	for attempt := 1; ; attempt++ {
		port, err := freeport.Pick(1)
		if err != nil {
			tb.Fatalf("find a free port for redis-server: %v", err)
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", cfg.dir, "--save", ""}
		if cfg.aof {
			args = append(args, "--appendonly", "yes", "--appendfsync", "always")
		} else {
			args = append(args, "--appendonly", "no")
		}
		s.port, s.args = port, append(args, "--daemonize", "no", "--loglevel", "warning")
		out, err := s.start()
		if err == nil {
			return s
		}
		s.Kill()
		if attempt < 3 && strings.Contains(out, "Address already in use") {
			continue
		}
		tb.Fatalf("redis-server on %s: %v\n%s", s.Addr(), err, strings.TrimSpace(out))
	}
}

// Addr returns the server's address, 127.0.0.1:port, the same across
// restarts.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// PID returns the process ID of the running server, 0 when it is not
// running.
func (s *Server) PID() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Start starts the server again on the same port and directory after
// [Server.Kill], and waits until it answers PING; a persistent server
// ([WithAOF]) first reloads its append-only file. Starting a running
// server, or one that does not come up, fails the test.
func (s *Server) Start() {
	s.tb.Helper()
	if s.cmd != nil {
		s.tb.Fatalf("redis-server on %s: Start while it is running (pid %d)", s.Addr(), s.cmd.Process.Pid)
	}
	if out, err := s.start(); err != nil {
		s.Kill()
		s.tb.Fatalf("redis-server on %s: %v\n%s", s.Addr(), err, strings.TrimSpace(out))
	}
}

// start starts the process and waits for it to answer PING; on failure it
// returns the process's output with the error (the caller kills it).
func (s *Server) start() (string, error) {
	cmd := exec.Command(s.bin, s.args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done, s.out = cmd, done, out
	if err := s.waitReady(); err != nil {
		return out.String(), err
	}
	return "", nil
}

// waitReady polls PING until the server answers, exits or the start
// timeout runs out.
func (s *Server) waitReady() error {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(s.timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err() // LOADING while the AOF is read
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("no answer to PING within " + s.timeout.String() + ": " + err.Error())
		}
		select {
		case <-s.done:
			return errors.New("exited before answering PING: " + s.cmd.ProcessState.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL to the server by its PID (nothing is saved beyond
// what the append-only file already holds) and waits until the process is
// reaped. Killing a server that is not running does nothing.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill() // os.Process never signals a reaped PID
	<-s.done
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port and
// directory, and waits until it answers PING. With graceful it sends
// SIGTERM, on which redis-server shuts down as on SHUTDOWN (it flushes the
// append-only file and closes its clients' connections), and waits up to
// the start timeout for the process to exit, then kills it; otherwise it
// kills it at once, as [Server.Kill] does. Unlike Kill and Start it
// returns a failure instead of reporting it through the test, so that it
// may run on a goroutine of its own, for example in the middle of a
// history of concurrent calls; the test's goroutine must wait for it
// before it calls another method of the server, since they must never run
// concurrently. whileDown, if not nil, runs after the old process has
// exited and before the new one starts: a test can make a call there that
// is sure to meet the restart.
func (s *Server) Restart(graceful bool, whileDown func()) error {
	if s.cmd == nil {
		return errors.New("redis-server on " + s.Addr() + ": Restart while it is not running")
	}
	if graceful {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
			s.cmd = nil
		case <-time.After(s.timeout):
			s.Kill()
			return errors.New("redis-server on " + s.Addr() + ": still running " + s.timeout.String() + " after SIGTERM")
		}
	}
	s.Kill()
	if whileDown != nil {
		whileDown()
	}
	if out, err := s.start(); err != nil {
		s.Kill()
		return errors.New("redis-server on " + s.Addr() + ": restart: " + err.Error() + "\n" + strings.TrimSpace(out))
	}
	return nil
}

// syncBuffer collects a process's output for error messages.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
