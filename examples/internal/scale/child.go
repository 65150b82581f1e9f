package scale

// The child processes: the node and the raw baseline, this program run
// again with ChildCommand.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/indexercmd"
	"github.com/indexkit/indexkit/examples/internal/cmd/querycmd"
	"github.com/indexkit/indexkit/examples/internal/cmd/scattercmd"
	"github.com/indexkit/indexkit/internal/logfields"
)

// ChildCommand is the first argument with which [Main] runs as a child of
// the benchmark: "child node <indexer flags>" is the indexer node
// (examples/indexer), "child query <query flags>" a query node
// (examples/query), "child scatter <scatter flags>" a front end
// (examples/scatter), "child rawpebble <flags>" the raw Pebble baseline,
// "child finder <flags>" the lookups sent during ingest.
const ChildCommand = "child"

// stopTimeout is how long a child has to exit after SIGTERM before it is
// killed.
const stopTimeout = 30 * time.Second

// child is a running child process.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	err  error         // its exit, once done is closed
	out  bytes.Buffer  // its standard output, once done is closed (rawpebble)
}

// startChild runs c.Exe with c.ExeArgs, ChildCommand and args. Its
// standard error (and its standard output unless keepStdout) goes line
// by line to logFile and to onLine.
func startChild(c Config, name, logFile string, keepStdout bool, onLine func(string), args ...string) (*child, error) {
	return startChildIn(c, name, logFile, nil, keepStdout, onLine, args...)
}

// startChildIn is startChild with the child's standard input read from
// stdin (nil: none).
func startChildIn(c Config, name, logFile string, stdin io.Reader, keepStdout bool, onLine func(string), args ...string) (*child, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	argv := append(append(append([]string(nil), c.ExeArgs...), ChildCommand), args...)
	ch := &child{name: name, cmd: exec.Command(c.Exe, argv...), done: make(chan struct{})}
	// The child dies with the benchmark, even if the benchmark is killed.
	ch.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	ch.cmd.Stdin = stdin
	pr, pw := io.Pipe()
	ch.cmd.Stderr = pw
	if keepStdout {
		ch.cmd.Stdout = &ch.out
	} else {
		ch.cmd.Stdout = pw
	}
	if err := ch.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var lines sync.WaitGroup
	lines.Go(func() {
		defer f.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(f, sc.Text())
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		io.Copy(io.Discard, pr) //nolint:errcheck // a line over 1 MiB: drain the rest
	})
	go func() {
		err := ch.cmd.Wait()
		pw.Close()
		lines.Wait()
		ch.err = err
		close(ch.done)
	}()
	return ch, nil
}

// pid is the child's process ID.
func (ch *child) pid() int { return ch.cmd.Process.Pid }

// exited reports whether the child has exited.
func (ch *child) exited() bool {
	select {
	case <-ch.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the child, and SIGKILL if it has not exited
// within stopTimeout; it returns the child's exit error. It may be
// called more than once.
func (ch *child) stop() error {
	if !ch.exited() {
		_ = ch.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-ch.done:
		case <-time.After(stopTimeout):
			_ = ch.cmd.Process.Kill()
			<-ch.done
		}
	}
	return ch.err
}

// node is a server child: the indexer node or a query node.
type node struct {
	*child
	dir   string
	addrs map[string]string // find, ingest, admin, metrics: host:port
}

// nodeArgs are the node's flags: every listener on an ephemeral port of
// 127.0.0.1, no libp2p, private addresses allowed (the publishers are on
// loopback), no announce rate limit, no connection caps, no freezing;
// then extra (an ingest node's -layout flags); then c.NodeFlags, which
// override them, but for a -log-level above info.
func nodeArgs(c Config, dir string, extra ...string) []string {
	args := []string{"node",
		"-dir", dir, "-store", "pebble",
		"-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-metrics", "127.0.0.1:0",
		"-p2p", "none", "-allow-private-addrs", "-announce-rate", "0",
		"-max-conns", "0", "-max-conns-per-ip", "0", "-freeze-at", "-1",
	}
	args = append(args, extra...)
	args = append(args, c.NodeFlags...)
	// The benchmark reads the node's msg=listening and msg=starting lines,
	// which it logs at INFO: a -log-level above that is lowered to info.
	if level := flagValue(c.NodeFlags, "log-level"); level != "" && level != "debug" && level != "info" {
		args = append(args, "-log-level", "info")
	}
	return args
}

// flagValue returns the value of the last -name or --name flag of args
// ("-name v" or "-name=v"), "" if there is none.
func flagValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if k, val, ok := strings.Cut(a, "="); ok && k == name {
			v = val
		} else if a == name && i+1 < len(args) {
			v = args[i+1]
		}
	}
	return v
}

// startNode starts the node on dir and waits until it listens. Its
// warnings and errors are logged.
func startNode(ctx context.Context, c Config, dir, logFile string, log *slog.Logger, extra ...string) (*node, error) {
	return startServer(ctx, c, "node", dir, logFile, log, nodeArgs(c, dir, extra...), "find", "ingest", "admin", "metrics")
}

// startServer starts a server child (name: its role in messages) with
// args, on dir, and waits until it has logged msg=starting and a
// msg=listening line for each of listeners. Its warnings and errors are
// logged.
func startServer(ctx context.Context, c Config, name, dir, logFile string, log *slog.Logger, args []string, listeners ...string) (*node, error) {
	n := &node{dir: dir, addrs: make(map[string]string)}
	var mu sync.Mutex
	ready := make(chan struct{})
	var once sync.Once
	warned := 0
	onLine := func(line string) {
		f := logfields.Parse(line)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case f["msg"] == "listening":
			n.addrs[f["name"]] = f["addr"]
		case f["msg"] == "starting":
			once.Do(func() { close(ready) })
		case (f["level"] == "WARN" || f["level"] == "ERROR") && warned < 20:
			warned++
			log.Warn(name+": "+f["msg"], "line", line)
		}
	}
	ch, err := startChild(c, name, logFile, false, onLine, args...)
	if err != nil {
		return nil, err
	}
	n.child = ch
	select {
	case <-ready:
	case <-ch.done:
		return nil, fmt.Errorf("%s exited at start (%v); its log: %s", name, ch.err, logFile)
	case <-ctx.Done():
		ch.stop()
		return nil, ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range listeners {
		if n.addrs[l] == "" {
			ch.stop()
			return nil, fmt.Errorf("%s started without a %s listener (is it disabled by a node flag?); its log: %s", name, l, logFile)
		}
	}
	return n, nil
}

func (n *node) url(name string) string { return "http://" + n.addrs[name] }

// childMain runs a child: the node, a query node or the raw baseline.
func childMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("child: want node, query, scatter, rawpebble or finder")
	}
	switch args[0] {
	case "node":
		return indexercmd.Main(ctx, args[1:], stderr)
	case "query":
		return querycmd.Main(ctx, args[1:], stderr)
	case "scatter":
		return scattercmd.Main(ctx, args[1:], stderr)
	case "rawpebble":
		return rawMain(ctx, args[1:], stdout, stderr)
	case "finder":
		return finderMain(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	return fmt.Errorf("child %q: want node, query, scatter, rawpebble or finder", strings.Join(args, " "))
}
