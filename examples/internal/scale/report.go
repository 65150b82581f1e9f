package scale

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Figures are the measures of one process's ingest: the node's or the raw
// baseline's.
type Figures struct {
	// Multihashes is the number ingested.
	Multihashes uint64
	// Wall and CPU are the wall time and the CPU time (user + system, of
	// the process alone) from the announce to the last publisher's head
	// applied, or of the raw writes.
	Wall, CPU time.Duration
	// RSS is the resident memory right after ingest, PeakRSS its peak
	// (VmHWM), in bytes.
	RSS, PeakRSS uint64
	// Disk is the bytes allocated to the files of the data directory
	// after ingest (the node's: index, state and identity).
	Disk int64
	// Debt is Pebble's estimated compaction debt after ingest, in bytes;
	// -1 when unknown (a node whose store is not Pebble).
	Debt int64
	// BytesIn is the bytes written into Pebble during ingest (its log and
	// the tables it ingested), BytesRewritten those its flushes and
	// compactions wrote: their ratio is the write amplification. -1 when
	// unknown. Compactions still owed (Debt) are not in it.
	BytesIn, BytesRewritten int64
	// Settled is set when Config.Settle was given: the node's figures
	// once Pebble owed no compaction, or when Config.Settle ran out.
	Settled *Settled
}

// Settled is what settling the compaction debt after ingest took.
type Settled struct {
	// Wall and CPU are the settling's alone, after the ingest's.
	Wall, CPU time.Duration
	// Done is false when Config.Settle ran out with compactions still
	// to run. Debt is Pebble's estimate at the end: above zero when done
	// means Pebble stopped compacting while its estimate still counted
	// bytes (a level not full enough for its compaction score).
	Done bool
	Debt int64
	// BytesRewritten counts the ingest's and the settling's compactions.
	BytesRewritten int64
	// Disk is the data directory's allocated bytes once settled.
	Disk int64
}

// SettledPerCPU is multihashes per CPU-second of the ingest and its
// settling together, 0 without Settled.
func (f Figures) SettledPerCPU() float64 {
	if f.Settled == nil {
		return 0
	}
	return float64(f.Multihashes) / (f.CPU + f.Settled.CPU).Seconds()
}

// SettledWriteAmp is the write amplification with the settling's
// compactions, 0 when unknown.
func (f Figures) SettledWriteAmp() float64 {
	if f.Settled == nil || f.BytesIn <= 0 || f.Settled.BytesRewritten < 0 {
		return 0
	}
	return float64(f.Settled.BytesRewritten) / float64(f.BytesIn)
}

// WriteAmp is the write amplification of the ingest so far: bytes
// flushed and compacted per byte written into Pebble, 0 when unknown.
func (f Figures) WriteAmp() float64 {
	if f.BytesIn <= 0 || f.BytesRewritten < 0 {
		return 0
	}
	return float64(f.BytesRewritten) / float64(f.BytesIn)
}

// Rate is multihashes per second of wall time.
func (f Figures) Rate() float64 { return float64(f.Multihashes) / f.Wall.Seconds() }

// PerCPU is multihashes per CPU-second: +Inf when the run was too short
// for the CPU clock (/proc counts in ticks of 10 ms) and CPU reads 0.
func (f Figures) PerCPU() float64 { return float64(f.Multihashes) / f.CPU.Seconds() }

// CPUPerMillion is CPU-seconds per million multihashes.
func (f Figures) CPUPerMillion() float64 { return f.CPU.Seconds() / float64(f.Multihashes) * 1e6 }

// DiskPerMh is bytes of disk allocated per multihash.
func (f Figures) DiskPerMh() float64 { return float64(f.Disk) / float64(f.Multihashes) }

// Latency is the timing of a series of finds (or raw gets).
type Latency struct {
	Name string
	// N is the number of requests, Found how many found their
	// multihash.
	N, Found int
	P50, P99 time.Duration
	// Rate is requests per second over the series.
	Rate float64
	// Late, for lookups sent on a schedule (the finds during ingest), is
	// how late the sender itself sent them: its timers and threads, not
	// the node. It is not counted in P50 and P99.
	Late *Late `json:",omitempty"`
}

// Late is how late a scheduled sender sent its requests.
type Late struct{ P50, P99 time.Duration }

// latencyOf summarizes the latencies lat of requests made in wall.
func latencyOf(name string, lat []time.Duration, wall time.Duration) Latency {
	l := Latency{Name: name, N: len(lat)}
	if len(lat) == 0 {
		return l
	}
	l.P50, l.P99 = percentiles(lat)
	l.Rate = float64(len(lat)) / wall.Seconds()
	return l
}

// percentiles returns the median and the 99th percentile of the
// non-empty d, which it leaves as it is.
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// Report is what [Run] measured.
type Report struct {
	// Config is the configuration run, with the shape's defaults.
	Config Config
	// Machine describes the machine.
	Machine string
	// Ads and Blocks are the ads and blocks of every chain.
	Ads, Blocks int
	// Node is the node's ingest; Unpaced the same node's with
	// -queries-first=false, nil without Config.Unpaced; Raw the raw
	// baseline's, nil without.
	Node    Figures
	Unpaced *Figures
	Raw     *Figures
	// Sharded is the sharded run's, nil without Config.Sharded.
	Sharded *ShardedFigures
	// Finds are the node's finds: after ingest with one client and with
	// Config.Clients, and during ingest; then the raw gets.
	Finds []Latency
}

// WriteTable writes the report as markdown tables: ingest, then finds.
func (r *Report) WriteTable(w io.Writer) error {
	c := r.Config
	var b strings.Builder
	shape := fmt.Sprintf("%d to %d", c.MinMhsPerAd, c.MhsPerAd)
	if c.MinMhsPerAd == c.MhsPerAd {
		shape = fmt.Sprint(c.MhsPerAd)
	}
	codec := "dag-json"
	if c.DagCBOR {
		codec = "dag-cbor"
	}
	fmt.Fprintf(&b, "%s multihashes, shape %s: %d publishers, %s ads, %s multihashes per ad, chunks of %d, %s, signed, over HTTP on 127.0.0.1\n",
		thousands(r.Node.Multihashes), c.Shape, c.Publishers, thousands(uint64(r.Ads)), shape, c.ChunkSize, codec)
	if len(c.NodeFlags) > 0 {
		fmt.Fprintf(&b, "node flags: %s\n", strings.Join(c.NodeFlags, " "))
	}
	fmt.Fprintf(&b, "machine: %s\n\n", r.Machine)

	b.WriteString("| ingest | mh/s | mh/CPU-s | CPU-s/M mh | wall s | RSS after MiB | RSS peak MiB | disk B/mh | compaction debt MiB | write amp |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, f Figures) {
		debt, wa := "—", "—"
		if f.Debt >= 0 {
			debt = fmt.Sprintf("%.1f", mib(uint64(f.Debt)))
		}
		if f.WriteAmp() > 0 {
			wa = fmt.Sprintf("%.2f", f.WriteAmp())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.1f | %.0f | %.0f | %.1f | %s | %s |\n", name,
			thousands(uint64(f.Rate())), perCPU(f.PerCPU()), f.CPUPerMillion(), f.Wall.Seconds(),
			mib(f.RSS), mib(f.PeakRSS), f.DiskPerMh(), debt, wa)
	}
	row("indexkit node", r.Node)
	if u := r.Unpaced; u != nil {
		row("indexkit node, queries first off", *u)
		fmt.Fprintf(&b, "| queries first / off | %.2f | %.2f | %.2f | %.2f | | | | | |\n",
			r.Node.Rate()/u.Rate(), r.Node.PerCPU()/u.PerCPU(), r.Node.CPUPerMillion()/u.CPUPerMillion(), r.Node.Wall.Seconds()/u.Wall.Seconds())
	}
	if r.Raw != nil {
		row("raw Pebble, same keys", *r.Raw)
		n, raw := r.Node, *r.Raw
		wa := "—"
		if n.WriteAmp() > 0 && raw.WriteAmp() > 0 {
			wa = fmt.Sprintf("%.2f", n.WriteAmp()/raw.WriteAmp())
		}
		fmt.Fprintf(&b, "| node / raw | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s |\n",
			n.Rate()/raw.Rate(), n.PerCPU()/raw.PerCPU(), n.CPUPerMillion()/raw.CPUPerMillion(), n.Wall.Seconds()/raw.Wall.Seconds(),
			float64(n.RSS)/float64(raw.RSS), float64(n.PeakRSS)/float64(raw.PeakRSS), n.DiskPerMh()/raw.DiskPerMh(), ratio(n.Debt, raw.Debt), wa)
	}

	writeSettled(&b, r)
	if sf := r.Sharded; sf != nil {
		writeSharded(&b, r.Node, sf)
	}

	b.WriteString("\n| find | requests | found | p50 µs | p99 µs | req/s | sent late by the finder p50 / p99 µs |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|\n")
	for _, l := range r.Finds {
		late := "—"
		if l.Late != nil {
			late = fmt.Sprintf("%.0f / %.0f", micros(l.Late.P50), micros(l.Late.P99))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %s | %s |\n", l.Name, l.N, l.Found,
			micros(l.P50), micros(l.P99), thousands(uint64(l.Rate)), late)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSettled writes the settling's table, when the run settled.
func writeSettled(b *strings.Builder, r *Report) {
	if r.Node.Settled == nil {
		return
	}
	b.WriteString("\n| ingest, then settled | settle wall s | settle CPU-s | mh/CPU-s with settling | CPU-s/M mh with settling | write amp with settling | disk B/mh settled | debt left MiB |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, f *Figures) {
		if f == nil || f.Settled == nil {
			return
		}
		s := f.Settled
		wa := "—"
		if f.SettledWriteAmp() > 0 {
			wa = fmt.Sprintf("%.2f", f.SettledWriteAmp())
		}
		left := fmt.Sprintf("%.1f", mib(uint64(max(s.Debt, 0))))
		if !s.Done {
			left += " (-settle ran out)"
		}
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %s | %.2f | %s | %.1f | %s |\n", name, s.Wall.Seconds(), s.CPU.Seconds(),
			perCPU(f.SettledPerCPU()), (f.CPU+s.CPU).Seconds()/float64(f.Multihashes)*1e6, wa,
			float64(s.Disk)/float64(f.Multihashes), left)
	}
	row("indexkit node", &r.Node)
	row("indexkit node, queries first off", r.Unpaced)
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func ratio(a, b int64) string {
	if a < 0 || b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// thousands writes n with commas: 10,000,000.
func thousands(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// writeSharded writes the sharded run's tables: the layer against the
// node, its processes, and the join.
func writeSharded(b *strings.Builder, node Figures, sf *ShardedFigures) {
	batch := "1 MiB (default)"
	if sf.BatchBytes > 0 {
		batch = fmt.Sprintf("%d B", sf.BatchBytes)
	}
	fmt.Fprintf(b, "\nsharded: 1 ingest node, %d query nodes, R = %d, batches of %s, every process on this machine; CPU summed over the processes, wall until every outbox is drained\n\n",
		sf.QueryNodes, sf.Replication, batch)
	b.WriteString("| sharded ingest | mh/s | mh/CPU-s | CPU-s/M mh | wall s | RSS after MiB | RSS peak MiB | disk B/mh |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, f Figures) {
		fmt.Fprintf(b, "| %s | %s | %s | %.2f | %.1f | %.0f | %.0f | %.1f |\n", name,
			thousands(uint64(f.Rate())), perCPU(f.PerCPU()), f.CPUPerMillion(), f.Wall.Seconds(),
			mib(f.RSS), mib(f.PeakRSS), f.DiskPerMh())
	}
	row("indexkit node, local Pebble", node)
	row(fmt.Sprintf("ingest node + %d query nodes", sf.QueryNodes), sf.Total)
	t := sf.Total
	fmt.Fprintf(b, "| sharded / local | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
		t.Rate()/node.Rate(), t.PerCPU()/node.PerCPU(), t.CPUPerMillion()/node.CPUPerMillion(), t.Wall.Seconds()/node.Wall.Seconds(),
		float64(t.RSS)/float64(node.RSS), float64(t.PeakRSS)/float64(node.PeakRSS), t.DiskPerMh()/node.DiskPerMh())
	fmt.Fprintf(b, "\nwalk done after %.1f s, outboxes drained after %.1f s; disk B/mh of the layer counts the R copies (%.1f B per stored copy)\n\n",
		sf.Walked.Seconds(), t.Wall.Seconds(), t.DiskPerMh()/float64(sf.Replication))
	b.WriteString("| process | CPU-s | share of CPU | RSS peak MiB | keys held | disk MiB | disk B/key |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|\n")
	fmt.Fprintf(b, "| ingest node | %.1f | %.0f%% | %.0f | — | %.1f | — |\n", sf.Ingest.CPU.Seconds(),
		100*sf.Ingest.CPU.Seconds()/t.CPU.Seconds(), mib(sf.Ingest.PeakRSS), mib(uint64(sf.Ingest.Disk)))
	var keys int64
	for _, q := range sf.Nodes {
		name := "query node " + q.Name
		share := fmt.Sprintf("%.0f%%", 100*q.CPU.Seconds()/t.CPU.Seconds())
		for _, j := range []*JoinFigures{sf.Join, sf.JoinBaseline} {
			if j != nil && q.Name == j.Node {
				name += " (joined; CPU of the join)"
				share = "—"
			}
		}
		perKey := "—"
		if q.Keys > 0 {
			perKey = fmt.Sprintf("%.1f", float64(q.Disk)/float64(q.Keys))
		}
		fmt.Fprintf(b, "| %s | %.1f | %s | %.0f | %s | %.1f | %s |\n", name, q.CPU.Seconds(), share,
			mib(q.PeakRSS), thousands(uint64(q.Keys)), mib(uint64(q.Disk)), perKey)
		keys += q.Keys
	}
	fmt.Fprintf(b, "| all query nodes | | | | %s (%.3f × %s multihashes) | | |\n",
		thousands(uint64(keys)), float64(keys)/float64(t.Multihashes), thousands(t.Multihashes))
	if e := sf.Epochs; e != nil && len(e.Times) > 0 {
		fmt.Fprintf(b, "\nlayout on etcd: a new epoch reached all %d processes (their status under their lease) in p50 %.0f ms, max %.0f ms, over %d epochs\n",
			e.Processes, ms(e.P50()), ms(e.Max()), len(e.Times))
	} else if sf.Store != "" {
		fmt.Fprintf(b, "\nlayout in a %s\n", sf.Store)
	}
	if sf.Join != nil {
		b.WriteString("\n| join | copy by | keys copied | copy s | keys/s copied | copy CPU-s | keys/CPU-s of the copy | drop s | keys dropped by the old owners | total s (first publish to done) | CPU-s of the join | keys/CPU-s of the join |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	}
	for _, j := range []*JoinFigures{sf.Join, sf.JoinBaseline} {
		if j == nil {
			continue
		}
		by := "sorted tables"
		if j.KeyByKey {
			by = "key by key (baseline)"
		}
		dropped := thousands(uint64(j.Dropped))
		if j.DropRanges > 0 {
			dropped = fmt.Sprintf("%d range deletions", j.DropRanges)
			if j.Dropped > 0 {
				dropped += " and " + thousands(uint64(j.Dropped)) + " keys"
			}
		}
		fmt.Fprintf(b, "| %s joins %d nodes | %s | %s | %.1f | %s | %.1f | %s | %.1f | %s | %.1f | %.1f | %s |\n", j.Node, j.Nodes, by,
			thousands(uint64(j.Copied)), j.Copy.Seconds(), thousands(uint64(j.CopyRate())), j.CopyCPU.Seconds(), perCPU(j.CopyPerCPU()),
			j.Drop.Seconds(), dropped, j.Total.Seconds(), j.CPU.Seconds(), perCPU(j.PerCPU()))
	}
	if j, k := sf.Join, sf.JoinBaseline; j != nil && k != nil && k.CopyRate() > 0 {
		fmt.Fprintf(b, "\nCopy by sorted tables: %.1f× the key-by-key rate in the same run.\n", j.CopyRate()/k.CopyRate())
	}
}

// perCPU formats a per-CPU-second rate with thousands separators, or "—"
// when the CPU time read 0 (a run shorter than the CPU clock's tick).
func perCPU(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "—"
	}
	return thousands(uint64(v))
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
