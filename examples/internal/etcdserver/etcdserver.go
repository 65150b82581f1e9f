package etcdserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/internal/freeport"
)

// DebianBinary is where Debian's etcd-server installs etcd.
const DebianBinary = "/usr/bin/etcd"

// Timings of the servers: a 50 ms heartbeat and a 500 ms election
// timeout, so that the server's smallest lease TTL (3/2 of the election
// timeout, rounded up to a second) is 1 s, not etcd's default 2 s, and
// the short TTLs of a local run are kept as given.
const (
	HeartbeatMs = 50
	ElectionMs  = 500
)

// Server is an etcd cluster of local processes, one per member, on free
// 127.0.0.1 ports, with its data directories under a directory of the
// caller's.
type Server struct {
	members []*member
}

type member struct {
	name    string
	client  string // host:port
	logFile string
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been reaped
}

// Endpoints are the members' client addresses (host:port), comma-separated.
func (s *Server) Endpoints() string {
	eps := make([]string, len(s.members))
	for i, m := range s.members {
		eps[i] = m.client
	}
	return strings.Join(eps, ",")
}

// PIDs are the members' process IDs.
func (s *Server) PIDs() []int {
	pids := make([]int, len(s.members))
	for i, m := range s.members {
		pids[i] = m.cmd.Process.Pid
	}
	return pids
}

// Binary returns etcd on PATH, else Debian's /usr/bin/etcd, or an error
// saying how to install it.
func Binary() (string, error) {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(DebianBinary); err == nil {
		return DebianBinary, nil
	}
	return "", fmt.Errorf("start etcd: no etcd on PATH nor at %s (Debian: apt-get install etcd-server)", DebianBinary)
}

// Start starts an etcd cluster of n members on free 127.0.0.1 ports, with
// data directories and logs under dir, and waits until every member
// answers /health. Stop it with [Server.Stop].
func Start(ctx context.Context, dir string, n int) (*Server, error) {
	if n < 1 {
		return nil, fmt.Errorf("start etcd: %d members: want at least 1", n)
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var errs []error
	for try := range 3 { // the free ports may be taken before the servers bind them
		s, err := launchEtcd(ctx, bin, filepath.Join(dir, "etcd-"+strconv.Itoa(try)), n)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func launchEtcd(ctx context.Context, bin, dir string, n int) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base, err := freeport.Pick(2 * n)
	if err != nil {
		return nil, err
	}
	peers := make([]string, n)
	for i := range n {
		peers[i] = fmt.Sprintf("m%d=http://127.0.0.1:%d", i, base+2*i+1)
	}
	s := &Server{}
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	token := "indexkit-" + hex.EncodeToString(rb[:])
	for i := range n {
		m := &member{
			name:    "m" + strconv.Itoa(i),
			client:  "127.0.0.1:" + strconv.Itoa(base+2*i),
			logFile: filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
			done:    make(chan struct{}),
		}
		peer := "http://127.0.0.1:" + strconv.Itoa(base+2*i+1)
		m.cmd = exec.Command(bin,
			"--name", m.name,
			"--data-dir", filepath.Join(dir, m.name+".etcd"),
			"--listen-client-urls", "http://"+m.client,
			"--advertise-client-urls", "http://"+m.client,
			"--listen-peer-urls", peer,
			"--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(peers, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", token,
			"--heartbeat-interval", strconv.Itoa(HeartbeatMs),
			"--election-timeout", strconv.Itoa(ElectionMs),
			"--logger", "zap", "--log-level", "warn", "--log-outputs", m.logFile,
		)
		if err := m.cmd.Start(); err != nil {
			s.Stop()
			return nil, fmt.Errorf("start etcd member %s: %w", m.name, err)
		}
		go func() { _ = m.cmd.Wait(); close(m.done) }()
		s.members = append(s.members, m)
	}
	for _, m := range s.members {
		if err := m.waitReady(ctx); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// waitReady polls the member's /health until it answers "true" (the
// cluster has a leader and the member serves), for at most 20 s.
func (m *member) waitReady(ctx context.Context) error {
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.client+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
			_ = resp.Body.Close()
			if strings.Contains(string(b), `"true"`) {
				return nil
			}
			err = fmt.Errorf("health %s", b)
		}
		last = err
		select {
		case <-m.done:
			return fmt.Errorf("etcd member %s on %s exited: %s", m.name, m.client, m.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd member %s on %s not ready after 20s: %v: %s", m.name, m.client, last, m.logTail())
		}
	}
}

// logTail returns the last 2 KiB of the member's log.
func (m *member) logTail() string {
	b, err := os.ReadFile(m.logFile)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b[max(0, len(b)-2048):]))
}

// Stop stops every member by its PID: SIGTERM, then SIGKILL after 5 s.
func (s *Server) Stop() {
	for _, m := range s.members {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, m := range s.members {
		select {
		case <-m.done:
		case <-time.After(5 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	}
}
