package localpool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/examples/internal/logtap"
)

// RoleCommand is the hidden subcommand that runs one role in processes
// mode: <executable> role <kind>, the role's spec as JSON on its standard
// input.
const RoleCommand = "role"

// Kinds of role.
const (
	KindIndexer   = "indexer"
	KindAssigner  = "assigner"
	KindScatter   = "scatter"
	KindPublisher = "publisher"
	KindPiece     = "piece"
)

// kinds are every kind of role, [KindQuery] included.
var kinds = []string{KindIndexer, KindAssigner, KindScatter, KindPublisher, KindPiece, KindQuery}

// readyMsg is the msg of the line a child logs once its role's New has
// returned, with the address of each listener under the listener's name.
const readyMsg = "role ready"

// ServeRole is the child's side of processes mode: the process was
// started as `<executable> role <kind>` ([RoleCommand]), and ServeRole
// runs the role of kind from the spec on in until ctx ends. A program
// does not call it itself but through package rolemain, which takes the
// signals (SIGINT and SIGTERM end ctx, SIGHUP arrives on hup) and exits:
// so that the pool can start the same executable as each role, with no go
// toolchain at run time, a program that runs a pool with Config.Processes
// calls rolemain.Run first thing in main, and a test binary in TestMain.
//
// The spec is the typed Config of the role's package that goroutine mode
// starts in process, as JSON. ServeRole binds the role's listeners,
// starts it through its package's New, as goroutine mode does, logs
// msg="role ready" with its listeners' addresses to stderr, and runs it
// until ctx ends, when it stops gracefully; each value on hup has a
// sharded role load its layout file again (nil: none). An unknown kind is
// an error wrapping [ErrUnknownKind].
func ServeRole(ctx context.Context, kind string, in io.Reader, stderr io.Writer, hup <-chan os.Signal) error {
	return serveRole(ctx, kind, in, stderr, hup)
}

// layoutReloader is a sharded role, which loads its layout file again.
type layoutReloader interface{ ReloadLayout() error }

// serveRole is a child's run of a role of kind: it decodes the spec from
// in, binds the listeners, starts the role as goroutine mode does, logs
// readyMsg, and runs it until ctx ends, reloading its layout at each
// signal on hup. It logs to stderr.
func serveRole(ctx context.Context, kind string, in io.Reader, stderr io.Writer, hup <-chan os.Signal) error {
	if !slices.Contains(kinds, kind) {
		return fmt.Errorf("kind %q: %w", kind, ErrUnknownKind)
	}
	var s roleSpec
	if err := json.NewDecoder(in).Decode(&s); err != nil {
		return fmt.Errorf("spec on standard input: %w", err)
	}
	if s.Kind != kind {
		return fmt.Errorf("a spec of kind %q for a role of kind %q", s.Kind, kind)
	}
	log := roleLogger(stderr)
	lns, err := s.listen()
	if err != nil {
		return err
	}
	svc, err := s.start(ctx, log, lns)
	if err != nil {
		return err
	}
	var addrs []any
	for i, l := range s.Listen {
		addrs = append(addrs, l.Name, lns[i].Addr().String())
	}
	log.Info(readyMsg, addrs...)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	for {
		select {
		case err := <-done:
			if cerr := svc.Close(); err == nil {
				err = cerr
			}
			return err
		case <-hup:
			rl, ok := svc.(layoutReloader)
			if !ok {
				log.Warn("SIGHUP: the role has no layout to load")
				continue
			}
			if err := rl.ReloadLayout(); err != nil {
				log.Error("SIGHUP: layout not loaded; keeping the one in force", "err", err)
			}
		}
	}
}

// roleLogger is a role's logger, in either mode: slog text lines at info
// and above on w.
func roleLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// stopTimeout bounds a graceful stop of a process before it is killed.
const stopTimeout = 20 * time.Second

// readyTimeout bounds the wait for a child's readyMsg.
const readyTimeout = 90 * time.Second

// run is one run of a role: a goroutine or a process.
type run struct {
	tap    *logtap.Tap
	ports  []int              // of the role's listeners as bound, in order
	cancel context.CancelFunc // goroutine mode
	svc    service            // goroutine mode
	cmd    *exec.Cmd          // processes mode
	done   chan struct{}      // closed when the run has returned
	err    error              // set before done is closed
}

// startGoroutine starts s in a goroutine; its log goes to w. It is ready
// when its New has returned.
func startGoroutine(ctx context.Context, s *roleSpec, w io.Writer) (*run, error) {
	tap := logtap.New(w)
	lns, err := s.listen()
	if err != nil {
		tap.Close()
		return nil, err
	}
	svc, err := s.start(ctx, roleLogger(tap), lns)
	if err != nil {
		tap.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &run{tap: tap, cancel: cancel, svc: svc, done: make(chan struct{})}
	for _, ln := range lns {
		r.ports = append(r.ports, ln.Addr().(*net.TCPAddr).Port)
	}
	go func() {
		err := svc.Run(rctx)
		if cerr := svc.Close(); err == nil {
			err = cerr
		}
		r.err = err
		tap.Close()
		close(r.done)
	}()
	return r, nil
}

// roleCommand is the command of a child that runs s: <exe> role <kind>,
// with s as JSON on its standard input, so that the secrets s holds (the
// admin and shard tokens) are on no command line and in no file.
func roleCommand(exe string, s *roleSpec) (*exec.Cmd, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("spec of %s: %w", s.Kind, err)
	}
	cmd := exec.Command(exe, RoleCommand, s.Kind)
	cmd.Stdin = bytes.NewReader(data)
	return cmd, nil
}

// startProcess starts s in a child process of exe (see [ServeRole]); its
// standard output and error go to w. It waits until the child has logged
// readyMsg (its New has returned), and kills it if it does not.
func startProcess(ctx context.Context, exe string, s *roleSpec, w io.Writer) (*run, error) {
	cmd, err := roleCommand(exe, s)
	if err != nil {
		return nil, err
	}
	tap := logtap.New(w)
	cmd.Stdout, cmd.Stderr = tap, tap
	if err := cmd.Start(); err != nil {
		tap.Close()
		return nil, err
	}
	r := &run{tap: tap, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%s exited: %s", s.Kind, ee.ProcessState)
		}
		r.err = err
		tap.Close()
		close(r.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	f, err := tap.WaitMsg(ctx, readyMsg)
	if err == nil {
		r.ports, err = readyPorts(f, s.Listen)
	}
	if err != nil {
		r.kill()
		if r.err != nil {
			err = fmt.Errorf("%w (%v)", err, r.err)
		}
		return nil, fmt.Errorf("%w; last log lines:\n%s", err, tail(tap.Lines(), 15))
	}
	return r, nil
}

// readyPorts are the ports of lns in the fields of a readyMsg line.
func readyPorts(f map[string]string, lns []listenSpec) ([]int, error) {
	ports := make([]int, len(lns))
	for i, l := range lns {
		_, port, err := net.SplitHostPort(f[l.Name])
		if err == nil {
			ports[i], err = strconv.Atoi(port)
		}
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
	}
	return ports, nil
}

func tail(lines []string, n int) string {
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stop ends the run gracefully (cancel, or SIGTERM then SIGKILL after
// stopTimeout) and waits for it.
func (r *run) stop() error {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		return r.err
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(stopTimeout):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	return r.err
}

// kill ends the run at once: SIGKILL for a process; a goroutine can only
// be cancelled, so it shuts down as on stop. It waits for the end.
func (r *run) kill() {
	if r.cancel != nil {
		r.cancel()
	} else {
		_ = r.cmd.Process.Kill()
	}
	<-r.done
}

// exited reports whether the run has returned.
func (r *run) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// roleLog is the writer of a role's log: it forwards each line at or
// above the level to the pool's Log with a role=<name> prefix, and hands
// every line to the role's watchers.
type roleLog struct {
	name  string
	cfg   *Config
	mu    sync.Mutex
	buf   []byte
	watch map[*watcher]struct{}
}

// watcher is a WaitLog in progress.
type watcher struct {
	match func(map[string]string) bool
	found chan map[string]string // buffered 1
}

func (l *roleLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		f := logtap.Fields(line)
		for w := range l.watch {
			if w.match(f) {
				select {
				case w.found <- f:
				default:
				}
				delete(l.watch, w)
			}
		}
		if lineLevel(f["level"]) >= l.cfg.LogLevel {
			_, _ = io.WriteString(l.cfg.Log, "role="+l.name+" "+line+"\n")
		}
	}
	return len(b), nil
}

// lineLevel reads the level of a slog text line; a line without one (a
// panic, a child's last error) counts as an error.
func lineLevel(s string) slog.Level {
	var l slog.Level
	if s == "" || l.UnmarshalText([]byte(s)) != nil {
		return slog.LevelError
	}
	return l
}
