package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/indexkit/indexkit/internal/freeport"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/netproxy"
)

// DefaultBinary is where Debian's etcd-server installs etcd.
const DefaultBinary = "/usr/bin/etcd"

// Timings of the test clusters: a 10 ms heartbeat and a 100 ms election
// timeout, so that elections take a fraction of a second and the server's
// smallest lease TTL (3/2 of the election timeout, rounded up to a second)
// is 1 s.
const (
	HeartbeatMs       = 10
	ElectionTimeoutMs = 100
	// MaxTxnOps is the --max-txn-ops of the test servers, above etcd's
	// default of 128 (see lease/etcd on the number of bids of one round).
	MaxTxnOps = 1024
)

const (
	readyTimeout = 20 * time.Second
	dialTimeout  = 2 * time.Second
	stopTimeout  = 10 * time.Second
)

// Binary returns the etcd binary to run: ETCD_BIN, else etcd on PATH, else
// [DefaultBinary]; "" when none exists.
func Binary() string {
	if b := os.Getenv("ETCD_BIN"); b != "" {
		return b
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	if _, err := os.Stat(DefaultBinary); err == nil {
		return DefaultBinary
	}
	return ""
}

// Unavailable reports that a component the test needs (the etcd binary, a
// server) is missing: it fails the test when the environment variable CI
// is set and skips it otherwise. It does not return.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

// Option configures [Start].
type Option func(*options)

type options struct {
	members int
	proxied bool
}

// WithMembers sets the number of members (default 1).
func WithMembers(n int) Option { return func(o *options) { o.members = max(1, n) } }

// WithProxies routes every member's client and peer traffic through
// internal/testbed/netproxy proxies, whose addresses the members advertise (see
// the package documentation for what that can isolate).
func WithProxies() Option { return func(o *options) { o.proxied = true } }

// Cluster is a running etcd cluster of the test's own.
type Cluster struct {
	tb      testing.TB
	bin     string
	token   string
	Members []*Member
}

// Member is one etcd process of a [Cluster].
type Member struct {
	c       *Cluster
	Name    string
	DataDir string
	LogFile string

	clientPort, peerPort int
	client, peer         *netproxy.Proxy // nil unless WithProxies

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been reaped
}

// Start runs a cluster of fresh members on free 127.0.0.1 ports, each
// with its data directory under tb.TempDir(), waits until every member
// answers /health, and kills them all (by PID) at the end of the test.
// Without the etcd binary it calls [Unavailable].
func Start(tb testing.TB, opts ...Option) *Cluster {
	tb.Helper()
	lane.Integration(tb, "starts an etcd cluster")
	o := options{members: 1}
	for _, f := range opts {
		f(&o)
	}
	bin := Binary()
	if bin == "" {
		Unavailable(tb, "etcd binary not found (install etcd-server or set ETCD_BIN)")
	}
	c := &Cluster{tb: tb, bin: bin, token: "indexkit-" + randHex(4)}
	base, err := freeport.Pick(2 * o.members)
	if err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	dir := tb.TempDir()
	for i := range o.members {
		m := &Member{
			c:          c,
			Name:       fmt.Sprintf("m%d", i),
			clientPort: base + 2*i,
			peerPort:   base + 2*i + 1,
		}
		m.DataDir = filepath.Join(dir, m.Name+".etcd")
		m.LogFile = filepath.Join(dir, m.Name+".log")
		if o.proxied {
			if m.client, err = netproxy.Listen(hostPort(m.clientPort)); err == nil {
				m.peer, err = netproxy.Listen(hostPort(m.peerPort))
			}
			if err != nil {
				tb.Fatalf("etcdtest: proxy: %v", err)
			}
			cp, pp := m.client, m.peer
			tb.Cleanup(func() { _ = cp.Close(); _ = pp.Close() })
		}
		c.Members = append(c.Members, m)
	}
	tb.Cleanup(c.killAll)
	for _, m := range c.Members {
		if err := m.launch("new"); err != nil {
			tb.Fatalf("etcdtest: %v", err)
		}
	}
	if err := c.WaitReady(); err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	return c
}

func hostPort(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ClientAddr is the address clients use: the client proxy's with
// WithProxies, else the member's own.
func (m *Member) ClientAddr() string {
	if m.client != nil {
		return m.client.Addr()
	}
	return hostPort(m.clientPort)
}

// PeerAddr is the peer address the member advertises: the peer proxy's
// with WithProxies, else its own.
func (m *Member) PeerAddr() string {
	if m.peer != nil {
		return m.peer.Addr()
	}
	return hostPort(m.peerPort)
}

// DirectClientAddr is the member's own client listener, which bypasses
// the proxy.
func (m *Member) DirectClientAddr() string { return hostPort(m.clientPort) }

// ClientProxy returns the proxy in front of the member's client port, nil
// without WithProxies.
func (m *Member) ClientProxy() *netproxy.Proxy { return m.client }

// PeerProxy returns the proxy in front of the member's peer port, nil
// without WithProxies.
func (m *Member) PeerProxy() *netproxy.Proxy { return m.peer }

func (c *Cluster) initialCluster() string {
	parts := make([]string, len(c.Members))
	for i, m := range c.Members {
		parts[i] = m.Name + "=http://" + m.PeerAddr()
	}
	return strings.Join(parts, ",")
}

// launch starts the member's process; state is "new" for a fresh member.
// A member restarted on its data directory ignores the initial-cluster
// flags and replays its WAL.
func (m *Member) launch(state string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("member %s is running (pid %d)", m.Name, m.cmd.Process.Pid)
	}
	args := []string{
		"--name", m.Name,
		"--data-dir", m.DataDir,
		"--listen-client-urls", "http://" + hostPort(m.clientPort),
		"--advertise-client-urls", "http://" + m.ClientAddr(),
		"--listen-peer-urls", "http://" + hostPort(m.peerPort),
		"--initial-advertise-peer-urls", "http://" + m.PeerAddr(),
		"--initial-cluster", m.c.initialCluster(),
		"--initial-cluster-state", state,
		"--initial-cluster-token", m.c.token,
		"--heartbeat-interval", strconv.Itoa(HeartbeatMs),
		"--election-timeout", strconv.Itoa(ElectionTimeoutMs),
		"--max-txn-ops", strconv.Itoa(MaxTxnOps),
		"--logger", "zap", "--log-level", "warn", "--log-outputs", m.LogFile,
	}
	cmd := exec.Command(m.c.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.Name, err)
	}
	done := make(chan struct{})
	m.cmd, m.done = cmd, done
	go func() { _ = cmd.Wait(); close(done) }()
	return nil
}

// PID returns the member's process ID, 0 when it is not running.
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Running reports whether the member's process is running (or stopped).
func (m *Member) Running() bool { return m.PID() != 0 }

// Signal sends sig to the member's process by its PID.
func (m *Member) Signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("etcdtest: member %s is not running", m.Name)
	}
	return m.cmd.Process.Signal(sig)
}

// Pause stops the process (SIGSTOP): it holds its sockets but answers
// nothing, as a long GC pause or a frozen VM would.
func (m *Member) Pause() error { return m.Signal(syscall.SIGSTOP) }

// Continue resumes a paused process (SIGCONT).
func (m *Member) Continue() error { return m.Signal(syscall.SIGCONT) }

// Kill kills the process (SIGKILL) and waits until it is reaped. Its data
// directory stays, for [Member.Restart].
func (m *Member) Kill() error { return m.stop(syscall.SIGKILL) }

// Stop stops the process gracefully (SIGTERM) and waits until it is
// reaped.
func (m *Member) Stop() error { return m.stop(syscall.SIGTERM) }

func (m *Member) stop(sig syscall.Signal) error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process must run to handle SIGTERM
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("etcdtest: signal member %s: %w", m.Name, err)
	}
	select {
	case <-done:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-done
	}
	m.mu.Lock()
	m.cmd, m.done = nil, nil
	m.mu.Unlock()
	return nil
}

// Start starts a stopped member again on its data directory and ports. It
// does not wait: use [Cluster.WaitReady] or [Member.WaitReady].
func (m *Member) Start() error { return m.launch("existing") }

// Restart kills the member (SIGKILL), starts it again on its data
// directory and waits until it answers /health.
func (m *Member) Restart() error {
	if err := m.Kill(); err != nil {
		return err
	}
	if err := m.Start(); err != nil {
		return err
	}
	return m.WaitReady()
}

// WaitReady waits until the member answers /health with "true" (it has a
// leader and applies writes), on its own client port.
func (m *Member) WaitReady() error {
	deadline := time.Now().Add(readyTimeout)
	hc := &http.Client{Timeout: time.Second}
	var last error
	for time.Now().Before(deadline) {
		m.mu.Lock()
		done := m.done
		m.mu.Unlock()
		if done == nil {
			return fmt.Errorf("member %s is not running", m.Name)
		}
		select {
		case <-done:
			return fmt.Errorf("member %s exited; log %s:\n%s", m.Name, m.LogFile, m.Log())
		default:
		}
		resp, err := hc.Get("http://" + m.DirectClientAddr() + "/health")
		if err == nil {
			var b [64]byte
			n, _ := resp.Body.Read(b[:])
			_ = resp.Body.Close()
			if strings.Contains(string(b[:n]), `"true"`) {
				return nil
			}
			err = fmt.Errorf("health %s", b[:n])
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("member %s not ready after %v: %v; log %s:\n%s", m.Name, readyTimeout, last, m.LogFile, m.Log())
}

// Log returns the member's log (warnings and errors), at most its last
// 8 KiB.
func (m *Member) Log() string {
	b, err := os.ReadFile(m.LogFile)
	if err != nil {
		return err.Error()
	}
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// WaitReady waits until every running member answers /health.
func (c *Cluster) WaitReady() error {
	var errs []error
	for _, m := range c.Members {
		if m.Running() {
			errs = append(errs, m.WaitReady())
		}
	}
	return errors.Join(errs...)
}

// Endpoints returns the client addresses of every member (the proxies'
// with WithProxies).
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.ClientAddr()
	}
	return out
}

// Leader returns the member that is the leader, as a running member's
// Status reports it, asked on its own client port.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	var last error
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		cli, err := newClient([]string{m.DirectClientAddr()})
		if err != nil {
			last = err
			continue
		}
		st, err := cli.Status(ctx, m.DirectClientAddr())
		_ = cli.Close()
		if err != nil {
			last = err
			continue
		}
		if st.Leader == 0 {
			last = fmt.Errorf("member %s knows no leader", m.Name)
			continue
		}
		if st.Leader == st.Header.MemberId {
			return m, nil
		}
		// Another member leads: find it by asking each for its ID.
		for _, o := range c.Members {
			if !o.Running() || o == m {
				continue
			}
			oc, err := newClient([]string{o.DirectClientAddr()})
			if err != nil {
				continue
			}
			ost, err := oc.Status(ctx, o.DirectClientAddr())
			_ = oc.Close()
			if err == nil && ost.Header.MemberId == st.Leader {
				return o, nil
			}
		}
		last = fmt.Errorf("leader %x is not a running member", st.Leader)
	}
	if last == nil {
		last = errors.New("no member is running")
	}
	return nil, fmt.Errorf("etcdtest: leader: %w", last)
}

// Kill kills every member (SIGKILL).
func (c *Cluster) Kill() error {
	var errs []error
	for _, m := range c.Members {
		errs = append(errs, m.Kill())
	}
	return errors.Join(errs...)
}

// Restart kills every member (SIGKILL), starts them all again on their
// data directories and waits until each answers /health: a whole-cluster
// restart that keeps what the members had made durable.
func (c *Cluster) Restart() error {
	if err := c.Kill(); err != nil {
		return err
	}
	for _, m := range c.Members {
		if err := m.Start(); err != nil {
			return err
		}
	}
	return c.WaitReady()
}

func (c *Cluster) killAll() {
	for _, m := range c.Members {
		_ = m.Kill()
	}
}

// newClient connects without the testing hooks, for the package's own
// checks.
func newClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
	})
}

// Client connects to endpoints (a Cluster's [Cluster.Endpoints]) with a
// 2 s dial timeout and a silent logger, checks the connection with a
// Status call, and closes the client at the end of the test.
func Client(tb testing.TB, endpoints ...string) *clientv3.Client {
	tb.Helper()
	cli, err := newClient(endpoints)
	if err != nil {
		tb.Fatalf("etcdtest: client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	if _, err := cli.Status(ctx, endpoints[0]); err != nil {
		_ = cli.Close()
		tb.Fatalf("etcdtest: etcd at %s: %v", endpoints[0], err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Prefix returns a fresh key prefix, "indexkit-test/name/<16 hex>/", and
// deletes every key under it at the end of the test, best effort (a test
// may have killed the cluster). Call it after [Client], so the keys are
// deleted before the client is closed.
func Prefix(tb testing.TB, cli *clientv3.Client, name string) string {
	tb.Helper()
	p := "indexkit-test/" + randHex(8) + "/"
	if name != "" {
		p = "indexkit-test/" + name + "/" + randHex(8) + "/"
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		defer cancel()
		_, _ = cli.Delete(ctx, p, clientv3.WithPrefix())
	})
	return p
}
