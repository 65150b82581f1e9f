package scale

// The keyspace-sharded run (-sharded N): the node as an ingest node
// writing through its outbox to N query nodes, each its own process; and
// a join (-join) of one more query node driven by a keyspace.Coordinator.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/examples/internal/etcdserver"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	storepebble "github.com/indexkit/indexkit/store/pebble"
)

// ingestName is the ingest node's name among the layout's writers.
const ingestName = "ingest1"

// ShardedFigures are the measures of the sharded run.
type ShardedFigures struct {
	// QueryNodes, Replication and BatchBytes are the layer's shape (0
	// BatchBytes: the writer's default).
	QueryNodes, Replication, BatchBytes int
	// Total is the ingest node and every query node together: CPU summed
	// over the processes, from the announces until every outbox is
	// drained (Wall); RSS and PeakRSS summed; Disk the query nodes' data
	// directories (R copies of each multihash). Debt is -1.
	Total Figures
	// Ingest is the ingest node alone (Disk: its data directory, the
	// provider records and the drained outbox).
	Ingest Figures
	// Walked is the wall time until the ingest node had applied every
	// head; Total.Wall - Walked is the wait for the outboxes to drain.
	Walked time.Duration
	// Outboxes is the ingest node's outbox towards each query node when
	// the figures were taken: every one drained.
	Outboxes map[string]keyspace.OutboxStatus
	// Nodes are the query nodes, those of the join included.
	Nodes []QueryNodeFigures
	// Store is where the layout lived: "etcd" or "file"; Layout is the
	// layout at the end of the run.
	Store  string
	Layout keyspace.Layout
	// Epochs, on etcd, is how long each of a series of new epochs took
	// from its publish to every process reporting it.
	Epochs *EpochFigures
	// Join is the join's, nil without Config.Join; JoinBaseline the
	// key-by-key join's after it, nil without Config.JoinBaseline.
	Join, JoinBaseline *JoinFigures
}

// QueryNodeFigures are one query node's.
type QueryNodeFigures struct {
	Name string
	// Dir is its data directory (removed after the run unless
	// Config.Keep).
	Dir string
	// Keys is the number of multihashes in its store at the end, counted
	// by reading the store after the node stopped.
	Keys int64
	// CPU is its CPU time during the sharded ingest (during the join for
	// the joining node: it did not run before).
	CPU time.Duration
	// PeakRSS is its VmHWM; Disk the bytes allocated under Dir after the
	// ingest (after the join for the joining node).
	PeakRSS uint64
	Disk    int64
}

// JoinFigures are the measures of adding one query node.
type JoinFigures struct {
	// Node is the name of the node added; Nodes the query nodes it
	// joined.
	Node  string
	Nodes int
	// KeyByKey is set when the node copied key by key, not as tables.
	KeyByKey bool
	// Copied is the keys its copy reports (Status.Copy.Keys); Dropped the
	// keys the old owners dropped one by one (their Status.Drop.Keys,
	// summed), DropRanges the range deletions of those that dropped ring
	// segments whole (Status.Drop.Ranges), whose keys go uncounted.
	Copied, Dropped, DropRanges int64
	// Copy is the time from the copy's request to the publication of
	// PhaseMoved (the copy done), Drop from the first drop request to
	// ActDone, Total from the first publication to ActDone (the old
	// owners have dropped the moved keys).
	Copy, Drop, Total time.Duration
	// CPU is the CPU time of every process during the join, CopyCPU
	// during Copy alone.
	CPU, CopyCPU time.Duration
}

// CopyRate is keys copied per second of Copy.
func (j JoinFigures) CopyRate() float64 { return float64(j.Copied) / j.Copy.Seconds() }

// PerCPU is keys copied per CPU-second of the whole join.
func (j JoinFigures) PerCPU() float64 { return float64(j.Copied) / j.CPU.Seconds() }

// CopyPerCPU is keys copied per CPU-second of the copy.
func (j JoinFigures) CopyPerCPU() float64 { return float64(j.Copied) / j.CopyCPU.Seconds() }

// sharded is the running layer.
type sharded struct {
	c       Config
	dir     string
	layout  string // the layout: a file, or etcd://... (s.etcd)
	etcd    *etcdlayout.Store
	etcdSrv *etcdserver.Server
	closeE  io.Closer
	token   string
	tokFile string
	queries []*node
	names   []string
	ingest  *node
	log     *slog.Logger
}

// runSharded runs the sharded part of the benchmark into r.Sharded.
func runSharded(ctx context.Context, c Config, r *Report, pubs []*publisher, tmp string, log *slog.Logger) error {
	s := &sharded{c: c, dir: filepath.Join(tmp, "sharded"), log: log}
	s.layout = filepath.Join(s.dir, "layout.json")
	s.tokFile = filepath.Join(s.dir, "shard.token")
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	s.token = hex.EncodeToString(tok)
	if err := os.WriteFile(s.tokFile, []byte(s.token+"\n"), 0o600); err != nil {
		return err
	}
	defer s.stop()

	l := keyspace.Layout{Epoch: 1, Replication: c.Replication, Phase: keyspace.PhaseStable, Writers: []string{ingestName}}
	addrs := make([]string, c.Sharded)
	for i := range c.Sharded {
		name := "q" + strconv.Itoa(i+1)
		a, err := freeAddr()
		if err != nil {
			return err
		}
		addrs[i] = a
		l.Nodes = append(l.Nodes, keyspace.Node{Name: name, URL: "http://" + a})
		l.Current = append(l.Current, name)
	}
	if err := s.publishFirst(ctx, l); err != nil {
		return err
	}
	for i, n := range l.Nodes {
		if _, err := s.startQuery(ctx, n.Name, addrs[i]); err != nil {
			return err
		}
	}
	extra := []string{"-layout", s.layout, "-shard-name", ingestName, "-shard-token-file", s.tokFile}
	if c.ShardBatchBytes > 0 {
		extra = append(extra, "-shard-batch-bytes", strconv.Itoa(c.ShardBatchBytes))
	}
	logFile := filepath.Join(s.dir, "ingest.log")
	var err error
	if s.ingest, err = startNode(ctx, c, filepath.Join(s.dir, "ingest"), logFile, log, extra...); err != nil {
		return err
	}
	log.Info("sharded layer started", "query_nodes", c.Sharded, "replication", c.Replication,
		"ingest_pid", s.ingest.pid(), "ingest_log", logFile)
	adm, err := admin.NewClient(s.ingest.url("admin"))
	if err != nil {
		return err
	}

	sf := &ShardedFigures{QueryNodes: c.Sharded, Replication: c.Replication, BatchBytes: c.ShardBatchBytes, Store: "file"}
	if s.etcd != nil {
		sf.Store = "etcd"
	}
	r.Sharded = sf
	procs := append([]*node{s.ingest}, s.queries...)
	s0, err := readProcs(procs)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := announceAll(ctx, pubs, s.ingest.url("ingest")); err != nil {
		return fmt.Errorf("announcing to the ingest node: %w", err)
	}
	indexed := make([]atomic.Uint64, len(pubs))
	if err := waitIngested(ctx, c, s.ingest, adm, pubs, indexed, s0[0], start, log, nil); err != nil {
		return fmt.Errorf("sharded ingest: %w", err)
	}
	sf.Walked = time.Since(start)
	log.Info("ingest node walked every chain; waiting for its outboxes to drain", "wall", sf.Walked.Round(time.Millisecond))
	if sf.Outboxes, err = s.waitDrained(ctx, start); err != nil {
		return err
	}
	wall := time.Since(start)
	s1, err := readProcs(procs)
	if err != nil {
		return err
	}
	sf.Total = Figures{Multihashes: n0(pubs), Wall: wall, Debt: -1, BytesIn: -1, BytesRewritten: -1}
	sf.Ingest = Figures{Multihashes: n0(pubs), Wall: wall, CPU: s1[0].CPU - s0[0].CPU, RSS: s1[0].RSS, PeakRSS: s1[0].HWM, Debt: -1, BytesIn: -1, BytesRewritten: -1}
	if sf.Ingest.Disk, err = allocated(s.ingest.dir); err != nil {
		return err
	}
	for i, p := range procs {
		sf.Total.CPU += s1[i].CPU - s0[i].CPU
		sf.Total.RSS += s1[i].RSS
		sf.Total.PeakRSS += s1[i].HWM
		if i == 0 {
			continue
		}
		q := QueryNodeFigures{Name: s.names[i-1], Dir: p.dir, CPU: s1[i].CPU - s0[i].CPU, PeakRSS: s1[i].HWM}
		if q.Disk, err = allocated(p.dir); err != nil {
			return err
		}
		sf.Total.Disk += q.Disk
		sf.Nodes = append(sf.Nodes, q)
	}
	log.Info("sharded ingest done", "multihashes", sf.Total.Multihashes, "wall", wall.Round(time.Millisecond),
		"cpu", sf.Total.CPU, "ingest_cpu", sf.Ingest.CPU, "mh_per_cpu_s", int(sf.Total.PerCPU()),
		"query_disk_b_per_mh", fmt.Sprintf("%.1f", sf.Total.DiskPerMh()))

	if err := s.finds(ctx, r, pubs); err != nil {
		return err
	}
	if s.etcd != nil {
		if sf.Epochs, err = s.epochs(ctx, procs); err != nil {
			return err
		}
	}
	if c.Join {
		if c.JoinAfter > 0 {
			log.Info("letting the query nodes' compactions settle before the join", "wait", c.JoinAfter)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(c.JoinAfter):
			}
		}
		if sf.Join, err = s.join(ctx, sf, false); err != nil {
			return err
		}
		if c.JoinBaseline {
			if sf.JoinBaseline, err = s.join(ctx, sf, true); err != nil {
				return err
			}
		}
	}
	if sf.Layout, err = s.load(ctx); err != nil {
		return err
	}
	if err := s.stop(); err != nil {
		return err
	}
	for i := range sf.Nodes {
		q := &sf.Nodes[i]
		if q.Keys, err = countKeys(ctx, filepath.Join(q.Dir, "index")); err != nil {
			return fmt.Errorf("query node %s: counting its keys: %w", q.Name, err)
		}
	}
	log.Info("query nodes counted", "nodes", sf.Nodes)
	return nil
}

// startQuery starts query node name listening on addr.
func (s *sharded) startQuery(ctx context.Context, name, addr string, extra ...string) (*node, error) {
	dir := filepath.Join(s.dir, name)
	logFile := filepath.Join(s.dir, name+".log")
	args := []string{"query", "-name", name, "-layout", s.layout, "-dir", dir, "-listen", addr,
		"-token-file", s.tokFile, "-store", "pebble", "-max-conns", "0", "-max-conns-per-ip", "0", "-log-level", "info"}
	args = append(args, extra...)
	n, err := startServer(ctx, s.c, "query node "+name, dir, logFile, s.log, args, "query")
	if err != nil {
		return nil, err
	}
	s.queries = append(s.queries, n)
	s.names = append(s.names, name)
	s.log.Info("query node started", "name", name, "pid", n.pid(), "url", n.url("query"), "log", logFile)
	return n, nil
}

// stop stops every child, the ingest node first; it may be called more
// than once.
func (s *sharded) stop() error {
	var errs []error
	defer s.stopEtcd()
	if s.ingest != nil {
		if err := s.ingest.stop(); err != nil {
			errs = append(errs, fmt.Errorf("ingest node: %w", err))
		}
	}
	for i, q := range s.queries {
		if err := q.stop(); err != nil {
			errs = append(errs, fmt.Errorf("query node %s: %w", s.names[i], err))
		}
	}
	return errors.Join(errs...)
}

// ingestStatus reads the ingest node's shard status.
func (s *sharded) ingestStatus(ctx context.Context, hc *http.Client) (keyspace.Status, error) {
	return getStatus(ctx, hc, s.ingest.url("find"))
}

// getStatus reads the shard status served at base.
func getStatus(ctx context.Context, hc *http.Client, base string) (keyspace.Status, error) {
	var st keyspace.Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+keyspace.PathStatus, nil)
	if err != nil {
		return st, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET %s: %s", keyspace.PathStatus, resp.Status)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st)
	return st, err
}

// waitDrained polls the ingest node's status until its outbox towards
// every query node is empty, and returns the outboxes then.
func (s *sharded) waitDrained(ctx context.Context, start time.Time) (map[string]keyspace.OutboxStatus, error) {
	hc := keepAliveClient(1)
	defer hc.CloseIdleConnections()
	tick := time.NewTicker(statusPoll)
	defer tick.Stop()
	lastLog := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ingest.done:
			return nil, fmt.Errorf("the ingest node exited while its outboxes drained (%v)", s.ingest.err)
		case <-tick.C:
		}
		st, err := s.ingestStatus(ctx, hc)
		if err != nil {
			s.log.Warn("reading the ingest node's shard status", "err", err)
			continue
		}
		pending, bytes := 0, int64(0)
		for _, o := range st.Owners {
			pending += o.Pending
			bytes += o.Bytes
		}
		if pending == 0 && len(st.Owners) >= len(s.queries) {
			return st.Owners, nil
		}
		if time.Since(lastLog) >= s.c.Status {
			s.log.Info("draining the outboxes", "batches", pending, "mib", int(mib(uint64(bytes))),
				"wall", time.Since(start).Round(time.Second))
			lastLog = time.Now()
		}
	}
}

// join adds one query node with a keyspace.Coordinator whose Reload sends
// SIGHUP to every process, and measures the move; with keyByKey the node
// copies key by key.
func (s *sharded) join(ctx context.Context, sf *ShardedFigures, keyByKey bool) (*JoinFigures, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	name := "q" + strconv.Itoa(len(s.queries)+1)
	var extra []string
	if keyByKey {
		extra = append(extra, "-copy-key-by-key")
	}
	joined := len(s.queries)
	nn, err := s.startQuery(ctx, name, addr, extra...)
	if err != nil {
		return nil, err
	}
	procs := append([]*node{s.ingest}, s.queries...)
	s0, err := readProcs(procs)
	if err != nil {
		return nil, err
	}
	var start, copyAt, movedAt, dropAt time.Time
	var sCopy, sMoved []procSample
	cc := keyspace.CoordinatorConfig{
		LayoutPath: s.layout,
		Ingest:     map[string]string{ingestName: s.ingest.url("find")},
		Token:      s.token,
		Poll:       50 * time.Millisecond,
		Logger:     s.log.With("part", "coordinator"),
		Reload: func(context.Context, keyspace.Layout) error {
			var errs []error
			for _, p := range procs {
				errs = append(errs, p.cmd.Process.Signal(syscall.SIGHUP))
			}
			return errors.Join(errs...)
		},
	}
	if s.etcd != nil {
		// Every process watches etcd and reports there.
		cc = keyspace.CoordinatorConfig{Store: s.etcd, Reports: s.etcd, Token: s.token, Poll: 50 * time.Millisecond, Logger: cc.Logger}
	}
	cc.OnAction = func(a keyspace.Action) {
		now := time.Now()
		switch {
		case a.Kind == keyspace.ActPublish && start.IsZero():
			start = now
		case a.Kind == keyspace.ActCopy && copyAt.IsZero():
			copyAt = now
			sCopy, _ = readProcs(procs)
		case a.Kind == keyspace.ActPublish && a.Layout.Phase == keyspace.PhaseMoved && movedAt.IsZero():
			movedAt = now
			sMoved, _ = readProcs(procs)
		case a.Kind == keyspace.ActDrop && dropAt.IsZero():
			dropAt = now
		}
	}
	coord, err := keyspace.NewCoordinator(cc)
	if err != nil {
		return nil, err
	}
	s.log.Info("joining", "node", name)
	if err := coord.Drive(ctx, keyspace.Goal{Join: &keyspace.Node{Name: name, URL: nn.url("query")}}); err != nil {
		return nil, fmt.Errorf("join %s: %w", name, err)
	}
	end := time.Now()
	s1, err := readProcs(procs)
	if err != nil {
		return nil, err
	}
	j := &JoinFigures{Node: name, Nodes: joined, KeyByKey: keyByKey, Total: end.Sub(start), Copy: movedAt.Sub(copyAt), Drop: end.Sub(dropAt)}
	for i := range procs {
		j.CPU += s1[i].CPU - s0[i].CPU
		if sCopy != nil && sMoved != nil {
			j.CopyCPU += sMoved[i].CPU - sCopy[i].CPU
		}
	}
	hc := keepAliveClient(1)
	defer hc.CloseIdleConnections()
	for i, q := range s.queries {
		st, err := getStatus(ctx, hc, q.url("query"))
		if err != nil {
			return nil, fmt.Errorf("query node %s: %w", s.names[i], err)
		}
		if q == nn {
			if st.Copy == nil || !st.Copy.Done {
				return nil, fmt.Errorf("query node %s joined without a finished copy: %+v", name, st.Copy)
			}
			j.Copied = st.Copy.Keys
		} else if st.Drop != nil {
			j.Dropped += st.Drop.Keys
			j.DropRanges += st.Drop.Ranges
		}
	}
	qf := QueryNodeFigures{Name: name, Dir: nn.dir, CPU: s1[len(s1)-1].CPU - s0[len(s0)-1].CPU, PeakRSS: s1[len(s1)-1].HWM}
	if qf.Disk, err = allocated(nn.dir); err != nil {
		return nil, err
	}
	sf.Nodes = append(sf.Nodes, qf)
	s.log.Info("joined", "node", name, "copied", j.Copied, "dropped", j.Dropped, "drop_ranges", j.DropRanges, "copy", j.Copy.Round(time.Millisecond),
		"total", j.Total.Round(time.Millisecond), "keys_per_s", int(j.CopyRate()), "cpu", j.CPU, "key_by_key", keyByKey)
	return j, nil
}

// finds times finds of the same samples as the node's through a front
// end (examples/scatter -layout) over the query nodes, and asking the
// first read owner of each key directly, into r.Finds. The front end is
// stopped before the join (the coordinator does not wait for it).
func (s *sharded) finds(ctx context.Context, r *Report, pubs []*publisher) error {
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	dir := filepath.Join(s.dir, "front")
	logFile := filepath.Join(s.dir, "front.log")
	args := []string{"scatter", "-layout", s.layout, "-listen", "127.0.0.1:0", "-metrics", "",
		"-max-conns", "0", "-max-conns-per-ip", "0", "-log-level", "info"}
	fe, err := startServer(ctx, s.c, "front end", dir, logFile, s.log, args, "find")
	if err != nil {
		return err
	}
	defer fe.stop()
	l, err := s.load(ctx)
	if err != nil {
		return err
	}
	place, err := keyspace.NewPlacement(l)
	if err != nil {
		return err
	}
	samples := sampleFinds(s.c, pubs)
	direct := make([]string, len(samples))
	for i, sm := range samples {
		direct[i] = l.Nodes[place.AppendReadOwners(nil, sm.mh)[0]].URL
	}
	hc := keepAliveClient(s.c.Clients + 1)
	defer hc.CloseIdleConnections()
	twice := append(append([]sample(nil), samples...), samples...)
	twiceURL := append(append([]string(nil), direct...), direct...)
	n := len(s.queries)
	for _, tc := range []struct {
		name    string
		samples []sample
		urls    []string
		clients int
	}{
		{fmt.Sprintf("front end -layout over %d query nodes, 1 client", n), samples, nil, 1},
		{fmt.Sprintf("front end -layout over %d query nodes, %d clients", n, s.c.Clients), twice, nil, s.c.Clients},
		{"a key's first owner asked directly, 1 client", samples, direct, 1},
		{fmt.Sprintf("a key's first owner asked directly, %d clients", s.c.Clients), twice, twiceURL, s.c.Clients},
	} {
		keys := make([][]byte, len(tc.samples))
		for i := range keys {
			keys[i] = []byte(strconv.Itoa(i))
		}
		lat, err := timeCalls(tc.name, keys, tc.clients, func(k []byte) (bool, error) {
			i, _ := strconv.Atoi(string(k))
			u := fe.url("find")
			if tc.urls != nil {
				u = tc.urls[i]
			}
			return find(ctx, hc, u, tc.samples[i])
		})
		if err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		if lat.Found < lat.N {
			s.log.Warn("finds missed multihashes the layer holds", "series", tc.name, "found", lat.Found, "of", lat.N)
		}
		r.Finds = append(r.Finds, lat)
	}
	return nil
}

// waitReady waits until every query node answers finds (a minute at
// most).
func (s *sharded) waitReady(ctx context.Context) error {
	hc := keepAliveClient(1)
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		ready := 0
		for _, q := range s.queries {
			if st, err := getStatus(ctx, hc, q.url("query")); err == nil && st.Ready {
				ready++
			}
		}
		if ready == len(s.queries) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d query nodes ready after a minute", ready, len(s.queries))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(statusPoll):
		}
	}
}

// readProcs samples each process.
func readProcs(procs []*node) ([]procSample, error) {
	out := make([]procSample, len(procs))
	for i, p := range procs {
		var err error
		if out[i], err = readProc(p.pid()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// freeAddr returns an address of 127.0.0.1 with a port free at the time
// of the call: a query node's URL must be in the layout before it starts.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// countKeys opens the stopped query node's Pebble index at dir and
// counts its multihashes.
func countKeys(ctx context.Context, dir string) (int64, error) {
	st, err := storepebble.Open(dir, storepebble.WithDigestPrefixKeys())
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var n int64
	for _, err := range st.All(ctx) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
