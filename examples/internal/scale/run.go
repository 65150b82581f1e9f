package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/logfields"
)

// statusPoll is how often the node's ingest status is read.
const statusPoll = 250 * time.Millisecond

// Main is the scale command: it parses args (see examples/scale's
// documentation), runs [Run] with progress on stderr and writes the
// report's tables to stdout. Run with [ChildCommand] first, it is one of
// the benchmark's child processes instead. It returns flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == ChildCommand {
		return childMain(ctx, args[1:], stdout, stderr)
	}
	c := DefaultConfig()
	if err := c.flags(args, stderr); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c.Exe = exe
	c.Logger = cli.NewLogger(stderr, slog.LevelInfo)
	r, err := Run(ctx, c)
	if err != nil {
		return err
	}
	return r.WriteTable(stdout)
}

// Run generates the chains, serves them, starts the node on a fresh data
// directory, announces the publishers to it, waits until it has applied
// every head while finds probe it, measures it, times finds, stops it,
// then runs the raw baseline. It returns when every child has exited,
// and removes its temporary directory unless c.Keep. When ctx ends it
// stops the children and returns ctx's error.
func Run(ctx context.Context, c Config) (*Report, error) {
	c, err := c.normalize()
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tmp, err := os.MkdirTemp(c.Dir, "indexkit-scale-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if c.Keep {
			log.Info("kept the data and logs", "dir", tmp)
			return
		}
		if err := os.RemoveAll(tmp); err != nil {
			log.Warn("removing the temporary directory", "dir", tmp, "err", err)
		}
	}()
	r := &Report{Config: c, Machine: machine()}

	pubs, err := startPublishers(ctx, c, log)
	if err != nil {
		return nil, err
	}
	defer stopPublishers(pubs)
	for _, p := range pubs {
		r.Ads += p.chain.Len()
		r.Blocks += p.chain.Blocks()
	}
	r.Node.Multihashes = n0(pubs)

	if err := runNode(ctx, c, r, pubs, tmp, log, nodeRun{name: "node", dir: "node", fig: &r.Node, finds: true}); err != nil {
		return nil, err
	}
	if c.Unpaced {
		r.Unpaced = &Figures{}
		if err := runNode(ctx, c, r, pubs, tmp, log, nodeRun{name: "node, queries first off", dir: "node-unpaced",
			flags: []string{"-queries-first=false"}, fig: r.Unpaced}); err != nil {
			return nil, err
		}
	}
	if c.Sharded > 0 {
		if err := runSharded(ctx, c, r, pubs, tmp, log); err != nil {
			return nil, err
		}
	}
	if c.Raw {
		if err := runRaw(ctx, c, r, pubs, tmp, log); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// nodeRun is one run of the node: the node as configured, or the
// baseline of queries first (the same node with -queries-first=false).
type nodeRun struct {
	name  string   // "node" or "node, queries first off": in messages and tables
	dir   string   // its data directory and log, under the run's
	flags []string // node flags added to c.NodeFlags
	fig   *Figures // where its ingest figures go
	finds bool     // time finds after ingest
}

// runNode runs the node's part of the benchmark, nr, into r.
func runNode(ctx context.Context, c Config, r *Report, pubs []*publisher, tmp string, log *slog.Logger, nr nodeRun) error {
	logFile := filepath.Join(tmp, nr.dir+".log")
	c.NodeFlags = append(append([]string(nil), nr.flags...), c.NodeFlags...)
	n, err := startNode(ctx, c, filepath.Join(tmp, nr.dir), logFile, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := n.stop(); err != nil {
			log.Warn(nr.name+" exit", "err", err, "log", logFile)
		}
	}()
	log.Info(nr.name+" started", "pid", n.pid(), "find", n.url("find"), "log", logFile)
	adm, err := admin.NewClient(n.url("admin"))
	if err != nil {
		return err
	}

	hc := keepAliveClient(c.Clients + 1)
	defer hc.CloseIdleConnections()
	var fd *finder
	if c.ProbeRate > 0 {
		if fd, err = startFinder(c, nr.name, filepath.Join(tmp, nr.dir+"-finder.log"), n.url("find"), pubs); err != nil {
			return err
		}
		defer fd.stop()
	}
	s0, err := readProc(n.pid())
	if err != nil {
		return err
	}
	start := time.Now()
	if err := announceAll(ctx, pubs, n.url("ingest")); err != nil {
		return fmt.Errorf("announcing: %w", err)
	}
	f := nr.fig
	f.Multihashes = n0(pubs)
	log.Info("announced", "publishers", len(pubs), "multihashes", f.Multihashes)

	indexed := make([]atomic.Uint64, len(pubs)) // per publisher, from the status
	err = waitIngested(ctx, c, n, adm, pubs, indexed, s0, start, log, func() {
		if fd != nil {
			fd.indexed(indexed)
		}
	})
	wall := time.Since(start)
	s1, perr := readProc(n.pid())
	var probe Latency
	if fd != nil {
		var ferr error
		probe, ferr = fd.finish(ctx)
		err = errors.Join(err, ferr)
	}
	if err = errors.Join(err, perr); err != nil {
		return err
	}
	f.Wall, f.CPU, f.RSS, f.PeakRSS = wall, s1.CPU-s0.CPU, s1.RSS, s1.HWM
	if f.Disk, err = allocated(n.dir); err != nil {
		return err
	}
	if _, err := pebbleFigures(ctx, hc, n.url("metrics"), f); err != nil {
		log.Warn("no Pebble figures", "err", err)
	}
	log.Info("ingested", "node", nr.name, "multihashes", f.Multihashes, "wall", wall.Round(time.Millisecond),
		"cpu", f.CPU, "mh_per_cpu_s", int(f.PerCPU()), "rss_mib", int(mib(f.RSS)),
		"disk_b_per_mh", fmt.Sprintf("%.1f", f.DiskPerMh()), "write_amp", fmt.Sprintf("%.2f", f.WriteAmp()))
	if fd != nil {
		args := []any{"node", nr.name, "p50", probe.P50, "p99", probe.P99, "rate", int(probe.Rate)}
		if probe.Late != nil {
			args = append(args, "sent_late_p50", probe.Late.P50, "sent_late_p99", probe.Late.P99)
		}
		log.Info("finds during ingest", args...)
	}
	if c.Settle > 0 && f.Debt >= 0 {
		if f.Settled, err = settle(ctx, c, n, hc, s1, log); err != nil {
			return err
		}
	}
	if !nr.finds {
		if fd != nil {
			r.Finds = append(r.Finds, probe)
		}
		return nil
	}

	samples := sampleFinds(c, pubs)
	seq, err := timeFinds(ctx, nr.name+", 1 client, after ingest", hc, n.url("find"), samples, 1)
	if err != nil {
		return err
	}
	par, err := timeFinds(ctx, fmt.Sprintf("%s, %d clients, after ingest", nr.name, c.Clients), hc, n.url("find"),
		append(append([]sample(nil), samples...), samples...), c.Clients)
	if err != nil {
		return err
	}
	r.Finds = append(r.Finds, seq, par)
	if fd != nil {
		r.Finds = append(r.Finds, probe)
	}
	log.Info("finds timed", "p50", seq.P50, "p99", seq.P99, "p99_"+strconv.Itoa(c.Clients), par.P99)
	if seq.Found < seq.N || par.Found < par.N {
		log.Warn("finds missed multihashes the node ingested", "found", seq.Found, "of", seq.N)
	}
	return nil
}

// settle waits, up to c.Settle, until node n's Pebble is done compacting
// and measures the wait from s1, the node's counters at the end of its
// ingest. Done means it owes nothing, or that it has stopped on its own:
// no compaction running and none finished for three polls a second apart
// (Pebble's debt estimate can stay above zero where its compaction
// scores do not ask for one, as with a higher L0 threshold).
func settle(ctx context.Context, c Config, n *node, hc *http.Client, s1 procSample, log *slog.Logger) (*Settled, error) {
	start := time.Now()
	deadline := start.Add(c.Settle)
	next := start.Add(c.Status)
	var f Figures
	idle, zero := 0, 0
	last := int64(-1)
	for {
		running, err := pebbleFigures(ctx, hc, n.url("metrics"), &f)
		if err != nil {
			return nil, err
		}
		if f.Debt == 0 {
			zero++
		} else {
			zero = 0
		}
		if running == 0 && f.BytesRewritten == last {
			idle++
		} else {
			idle = 0
		}
		last = f.BytesRewritten
		now := time.Now()
		if zero == 2 || idle == 3 || now.After(deadline) {
			break
		}
		if now.After(next) {
			log.Info("settling", "debt_mib", int(mib(uint64(max(f.Debt, 0)))), "compacted_mib", int(mib(uint64(max(f.BytesRewritten, 0)))),
				"compactions", running, "took", now.Sub(start).Round(time.Second))
			next = now.Add(c.Status)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	s2, err := readProc(n.pid())
	if err != nil {
		return nil, err
	}
	disk, err := allocated(n.dir)
	if err != nil {
		return nil, err
	}
	st := &Settled{Wall: time.Since(start), CPU: s2.CPU - s1.CPU, Done: f.Debt == 0 || idle == 3, Debt: f.Debt,
		BytesRewritten: f.BytesRewritten, Disk: disk}
	log.Info("settled", "done", st.Done, "wall", st.Wall.Round(time.Millisecond), "cpu", st.CPU, "debt_mib", int(mib(uint64(max(f.Debt, 0)))))
	return st, nil
}

// keepAliveClient is an HTTP client that keeps up to conns connections
// to one host.
func keepAliveClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = conns, conns, conns
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

// waitIngested polls the node's ingest status until every publisher's
// head is applied, logging progress every c.Status and keeping indexed
// up to date (onStatus, if not nil, is called after each update).
func waitIngested(ctx context.Context, c Config, n *node, adm *admin.Client, pubs []*publisher,
	indexed []atomic.Uint64, s0 procSample, start time.Time, log *slog.Logger, onStatus func()) error {
	byID := make(map[string]int, len(pubs))
	for i, p := range pubs {
		byID[p.pub.ID().String()] = i
	}
	tick := time.NewTicker(statusPoll)
	defer tick.Stop()
	lastLog, lastN, lastT := start, uint64(0), start
	warned := make(map[string]bool)
	ads := 0
	for _, p := range pubs {
		ads += p.chain.Len()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			return fmt.Errorf("the node exited during ingest (%v)", n.err)
		case <-tick.C:
		}
		sts, err := adm.IngestStatus(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Warn("reading the ingest status", "err", err)
			continue
		}
		done, total, walked, applied := 0, uint64(0), uint64(0), uint64(0)
		for _, st := range sts {
			i, ok := byID[st.Publisher.String()]
			if !ok {
				continue
			}
			indexed[i].Store(st.EntriesIndexed)
			total += st.EntriesIndexed
			walked += st.AdsWalked
			applied += st.AdsApplied
			if st.LastHead == pubs[i].chain.Head() && !st.Walking {
				done++
			}
			if st.LastError != "" && !warned[st.LastError] {
				warned[st.LastError] = true
				log.Warn("a walk failed", "publisher", st.Publisher.String(), "err", st.LastError, "failures", st.Failures)
			}
		}
		if onStatus != nil {
			onStatus()
		}
		if done == len(pubs) {
			if want := n0(pubs); total != want {
				return fmt.Errorf("the node applied every head but reports %d multihashes indexed of %d", total, want)
			}
			return nil
		}
		if now := time.Now(); now.Sub(lastLog) >= c.Status {
			s, _ := readProc(n.pid())
			rate := float64(total-lastN) / now.Sub(lastT).Seconds()
			log.Info("ingesting", "multihashes", total, "of", n0(pubs),
				"rate", int(rate), "mean_rate", int(float64(total)/now.Sub(start).Seconds()),
				"ads_walked", walked, "ads_applied", applied, "ads", ads,
				"node_cpu_s", fmt.Sprintf("%.1f", (s.CPU-s0.CPU).Seconds()), "node_rss_mib", int(mib(s.RSS)),
				"publishers_done", done)
			lastLog, lastN, lastT = now, total, now
		}
	}
}

// n0 is the multihashes of every chain.
func n0(pubs []*publisher) uint64 {
	var n uint64
	for _, p := range pubs {
		n += p.chain.Multihashes()
	}
	return n
}

// sample is a multihash to find and the provider it must be found under.
type sample struct {
	mh       multihash.Multihash
	provider string
}

// sampleFinds picks c.Samples multihashes of the chains at random, the
// last one of each chain first.
func sampleFinds(c Config, pubs []*publisher) []sample {
	rng := rand.New(rand.NewPCG(c.Seed, 11))
	s := make([]sample, 0, c.Samples)
	for _, p := range pubs {
		if len(s) < c.Samples {
			s = append(s, sample{p.chain.Multihash(p.chain.Multihashes() - 1), p.chain.Provider.String()})
		}
	}
	for len(s) < c.Samples {
		p := pubs[rng.IntN(len(pubs))]
		s = append(s, sample{p.chain.Multihash(rng.Uint64N(p.chain.Multihashes())), p.chain.Provider.String()})
	}
	return s
}

// find asks the node for one multihash; found means 200 with the
// provider in the answer.
func find(ctx context.Context, hc *http.Client, findURL string, s sample) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, findURL+"/multihash/"+s.mh.B58String(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return bytes.Contains(body, []byte(s.provider)), nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("GET /multihash/%s: %s", s.mh.B58String(), resp.Status)
}

// timeFinds finds every sample from c clients and times each request.
func timeFinds(ctx context.Context, name string, hc *http.Client, findURL string, samples []sample, c int) (Latency, error) {
	keys := make([][]byte, len(samples)) // indices, for timeCalls
	for i := range keys {
		keys[i] = []byte(strconv.Itoa(i))
	}
	return timeCalls(name, keys, c, func(k []byte) (bool, error) {
		i, _ := strconv.Atoi(string(k))
		return find(ctx, hc, findURL, samples[i])
	})
}

// The node's metrics the benchmark reads after ingest.
const (
	debtMetric      = "indexkit_indexer_pebble_compaction_debt_bytes"
	bytesInMetric   = "indexkit_indexer_pebble_bytes_in_total"
	rewrittenMetric = "indexkit_indexer_pebble_bytes_compacted_total"
	runningMetric   = "indexkit_indexer_pebble_compactions_running"
)

// pebbleFigures reads the node's Pebble figures from its metrics into f:
// the compaction debt and the bytes written in and rewritten. It returns
// the compactions running.
func pebbleFigures(ctx context.Context, hc *http.Client, metricsURL string, f *Figures) (running int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	vals := make(map[string]int64)
	for line := range strings.SplitSeq(string(body), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			vals[name] = int64(x)
		}
	}
	var missing []string
	for name, dst := range map[string]*int64{debtMetric: &f.Debt, bytesInMetric: &f.BytesIn, rewrittenMetric: &f.BytesRewritten, runningMetric: &running} {
		v, ok := vals[name]
		if !ok {
			missing = append(missing, name)
			v = -1
		}
		*dst = v
	}
	if len(missing) > 0 {
		return running, fmt.Errorf("the node's metrics have no %s", strings.Join(missing, ", "))
	}
	return running, nil
}

// runRaw runs the raw baseline child into r.
func runRaw(ctx context.Context, c Config, r *Report, pubs []*publisher, tmp string, log *slog.Logger) error {
	logFile := filepath.Join(tmp, "rawpebble.log")
	dir := filepath.Join(tmp, "rawpebble")
	var chPid atomic.Int64
	start := time.Now()
	progress := func(line string) {
		f := logfields.Parse(line)
		if f["msg"] != "writing" {
			return
		}
		keys, _ := strconv.ParseUint(f["keys"], 10, 64)
		var cpu time.Duration
		var rss uint64
		if s, err := readProc(int(chPid.Load())); err == nil {
			cpu, rss = s.CPU, s.RSS
		}
		disk, _ := allocated(dir)
		log.Info("raw Pebble writing", "keys", keys, "of", r.Node.Multihashes,
			"mean_rate", int(float64(keys)/time.Since(start).Seconds()),
			"cpu_s", fmt.Sprintf("%.1f", cpu.Seconds()), "rss_mib", int(mib(rss)), "disk_mib", int(mib(uint64(disk))))
	}
	ch, err := startChild(c, "rawpebble", logFile, true, progress, rawArgs(c, dir, pubs)...)
	if err != nil {
		return err
	}
	chPid.Store(int64(ch.pid()))
	log.Info("raw Pebble baseline started", "pid", ch.pid(), "multihashes", r.Node.Multihashes)
	select {
	case <-ch.done:
	case <-ctx.Done():
		ch.stop()
		return ctx.Err()
	}
	if ch.err != nil {
		return fmt.Errorf("raw Pebble baseline: %w; its log: %s", ch.err, logFile)
	}
	var res rawResult
	if err := json.Unmarshal(ch.out.Bytes(), &res); err != nil {
		return fmt.Errorf("raw Pebble baseline: its result: %w", err)
	}
	r.Raw = &res.Figures
	r.Finds = append(r.Finds, res.Seq, res.Par)
	log.Info("raw Pebble baseline done", "wall", res.Figures.Wall.Round(time.Millisecond), "cpu", res.Figures.CPU,
		"mh_per_cpu_s", int(res.Figures.PerCPU()))
	return nil
}
