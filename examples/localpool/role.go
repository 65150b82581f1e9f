package localpool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/indexercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/examples/piecenode"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/examples/scatternode"
)

// RoleCommand is the hidden subcommand that runs one role in processes
// mode: <executable> role <kind> <flags of the role's binary...>.
const RoleCommand = "role"

// Kinds of role, and the program of each.
const (
	KindIndexer   = "indexer"
	KindAssigner  = "assigner"
	KindScatter   = "scatter"
	KindPublisher = "publisher"
	KindPiece     = "piece"
)

var programs = map[string]cli.RunFunc{
	KindIndexer:   indexercmd.Main,
	KindAssigner:  assignernode.Main,
	KindScatter:   scatternode.Main,
	KindPublisher: publishernode.Main,
	KindPiece:     piecenode.Main,
	KindQuery:     querynode.Main,
}

// RoleMain runs a role and exits when the process was started as one
// (os.Args[1] is [RoleCommand]); otherwise it returns at once. A program
// that runs a pool with Config.Processes calls it first thing in main,
// and a test binary in TestMain, so that the pool can start the same
// executable as each role: no go toolchain is needed at run time.
// SIGINT and SIGTERM stop the role gracefully; the exit status is 0 after
// a clean shutdown, 1 after an error, 2 for an unknown kind.
func RoleMain() {
	if len(os.Args) < 3 || os.Args[1] != RoleCommand {
		return
	}
	kind := os.Args[2]
	run, ok := programs[kind]
	if !ok {
		fmt.Fprintf(os.Stderr, "pool: %s %q: unknown kind of role\n", RoleCommand, kind)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[3:], os.Stderr)
	stop()
	os.Exit(cli.ExitCode(kind, err, os.Stderr))
}

// stopTimeout bounds a graceful stop of a process before it is killed.
const stopTimeout = 20 * time.Second

// run is one run of a role: a goroutine or a process.
type run struct {
	tap    *logtap.Tap
	cancel context.CancelFunc // goroutine mode
	cmd    *exec.Cmd          // processes mode
	svc    service            // goroutine mode through a typed API
	done   chan struct{}      // closed when the run has returned
	err    error              // set before done is closed
}

// startRun starts the program of kind with args, its log going to w; it
// does not wait for anything.
func startRun(cfg *Config, kind string, args []string, w io.Writer) (*run, error) {
	r := &run{tap: logtap.New(w), done: make(chan struct{})}
	if !cfg.Processes {
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() {
			r.err = programs[kind](ctx, args, r.tap)
			r.tap.Close()
			close(r.done)
		}()
		return r, nil
	}
	exe := cfg.Executable
	r.cmd = exec.Command(exe, append([]string{RoleCommand, kind}, args...)...)
	r.cmd.Stdout = r.tap
	r.cmd.Stderr = r.tap
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	go func() {
		err := r.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%s exited: %s", kind, ee.ProcessState)
		}
		r.err = err
		r.tap.Close()
		close(r.done)
	}()
	return r, nil
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
// panic, a flag error) counts as an error.
func lineLevel(s string) slog.Level {
	l, err := cli.ParseLevel(s)
	if err != nil {
		return slog.LevelError
	}
	return l
}
