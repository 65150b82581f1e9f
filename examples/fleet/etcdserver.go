package main

import (
	"context"
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

// debianEtcd is where Debian's etcd-server installs etcd.
const debianEtcd = "/usr/bin/etcd"

// Timings of the etcd that demo and sim start: a 50 ms heartbeat and a
// 500 ms election timeout, so that the server's smallest lease TTL (3/2 of
// the election timeout, rounded up to a second) is 1 s, not etcd's
// default 2 s, and the -liveness and -ttl of a quick run are kept as
// given.
const (
	etcdHeartbeatMs = 50
	etcdElectionMs  = 500
)

// etcdServer is an etcd cluster of local processes, one per member, on
// free 127.0.0.1 ports, with its data directories under a directory of
// the caller's.
type etcdServer struct {
	members []*etcdMember
}

type etcdMember struct {
	name    string
	client  string // host:port
	logFile string
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been reaped
}

// Endpoints are the members' client addresses, comma-separated: the -etcd
// flag of the nodes.
func (s *etcdServer) Endpoints() string {
	eps := make([]string, len(s.members))
	for i, m := range s.members {
		eps[i] = m.client
	}
	return strings.Join(eps, ",")
}

// PIDs are the members' process IDs.
func (s *etcdServer) PIDs() []int {
	pids := make([]int, len(s.members))
	for i, m := range s.members {
		pids[i] = m.cmd.Process.Pid
	}
	return pids
}

// etcdBinary returns etcd on PATH, else Debian's /usr/bin/etcd.
func etcdBinary() (string, error) {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(debianEtcd); err == nil {
		return debianEtcd, nil
	}
	return "", fmt.Errorf("start etcd: no etcd on PATH nor at %s (Debian: apt-get install etcd-server)", debianEtcd)
}

// startEtcd starts an etcd cluster of n members on free 127.0.0.1 ports,
// with data directories and logs under dir, and waits until every member
// answers /health.
func startEtcd(ctx context.Context, dir string, n int) (*etcdServer, error) {
	if n < 1 {
		return nil, fmt.Errorf("start etcd: %d members: want at least 1", n)
	}
	bin, err := etcdBinary()
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

func launchEtcd(ctx context.Context, bin, dir string, n int) (*etcdServer, error) {
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
	s := &etcdServer{}
	token := strings.TrimSuffix(randomPrefix("fleet-"), ":")
	for i := range n {
		m := &etcdMember{
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
			"--heartbeat-interval", strconv.Itoa(etcdHeartbeatMs),
			"--election-timeout", strconv.Itoa(etcdElectionMs),
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
func (m *etcdMember) waitReady(ctx context.Context) error {
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
func (m *etcdMember) logTail() string {
	b, err := os.ReadFile(m.logFile)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b[max(0, len(b)-2048):]))
}

// Stop stops every member by its PID: SIGTERM, then SIGKILL after 5 s.
func (s *etcdServer) Stop() {
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
