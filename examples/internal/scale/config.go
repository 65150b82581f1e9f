package scale

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/indexkit/indexkit/ingest/chaingen"
)

// The shapes of the chains ([Config.Shape]).
const (
	// ShapeAds is ordinary ads: many multihashes per ad, in entry chunks.
	ShapeAds = "ads"
	// ShapeContexts is many small ads, one context each, as Boost and
	// Curio publish: 1 to 16 multihashes per ad by default.
	ShapeContexts = "contexts"
)

// Defaults of [Config].
const (
	DefaultMultihashes = 10_000_000
	DefaultPublishers  = 4
	// DefaultMhsPerAd and DefaultChunkSize are the ordinary shape's ads:
	// 10 chunks of 1,000 multihashes, the chunk size of storetheindex's
	// loadgen and of the reference publishers.
	DefaultMhsPerAd  = 10_000
	DefaultChunkSize = chaingen.DefaultChunkSize
	// DefaultContextMinMhs and DefaultContextMaxMhs bound the multihashes
	// of each ad of the contexts shape.
	DefaultContextMinMhs = 1
	DefaultContextMaxMhs = 16
	DefaultSamples       = 3000
	DefaultClients       = 64
	DefaultProbeRate     = 1000
	DefaultStatus        = 5 * time.Second
	// DefaultReplication is the owners of each key in a sharded run.
	DefaultReplication = 2
)

// Config is what [Run] measures. [DefaultConfig] gives the defaults; a
// zero field is not always its default.
type Config struct {
	// Multihashes is the total to ingest, split evenly between the
	// publishers and rounded up to whole ads.
	Multihashes uint64
	// Contexts, when positive, is instead the total number of ads (one
	// context each), whatever Multihashes says.
	Contexts int
	// Shape is [ShapeAds] or [ShapeContexts].
	Shape string
	// Publishers is the number of publishers, each serving its own chain
	// over HTTP.
	Publishers int
	// MinMhsPerAd and MhsPerAd bound the multihashes of each ad (equal:
	// every ad has MhsPerAd); ChunkSize is the entries per chunk. 0 takes
	// the shape's default.
	MinMhsPerAd, MhsPerAd, ChunkSize int
	// DagCBOR makes the publishers' blocks dag-cbor rather than dag-json
	// (what the reference publishers serve).
	DagCBOR bool
	// Seed is the chains' seed: publisher i uses Seed+i.
	Seed uint64

	// Samples is the number of finds timed after ingest, one client at a
	// time, and twice as many with Clients clients; the raw baseline times
	// as many point gets.
	Samples int
	// Clients is the number of concurrent keep-alive clients.
	Clients int
	// ProbeRate is the finds per second sent during ingest (0: none).
	ProbeRate float64
	// Status is the interval of the progress lines.
	Status time.Duration
	// Raw runs the raw Pebble baseline.
	Raw bool
	// Unpaced runs the node a second time, on a fresh directory, with
	// -queries-first=false: the baseline of the first run's finds during
	// ingest and of its ingest rate.
	Unpaced bool
	// Settle, when positive, waits after each node's ingest, up to this
	// long, until Pebble owes no compaction, and reports the CPU of the
	// ingest with its settling: what a multihash costs in the end, which
	// a node that defers compactions does not show in its ingest alone.
	// The finds after ingest are then timed on the settled index.
	Settle time.Duration

	// Sharded, when positive, runs the keyspace-sharded layer too, after
	// the node: the node again as an ingest node (-layout) writing
	// through its outbox to Sharded query nodes (examples/query, each its
	// own process), with Replication owners per key (0: 2) and batches of
	// ShardBatchBytes (0: the writer's 1 MiB).
	Sharded, Replication, ShardBatchBytes int
	// Join, with Sharded, then adds one more query node with a
	// keyspace.Coordinator and measures the move: the node copies what it
	// gains as sorted tables. JoinBaseline, with Join, then adds another
	// that copies key by key (examples/query -copy-key-by-key), the
	// baseline measured in the same run.
	Join, JoinBaseline bool
	// JoinAfter, with Join, is how long the run waits after the ingest
	// before the join: the query nodes' compactions of the ingest settle
	// meanwhile, as they have in a layer that grows long after it filled
	// (0: the join starts at once).
	JoinAfter time.Duration
	// LayoutStore, with Sharded, is where the layer's layout lives: "etcd"
	// (an etcd member the run starts: every process watches the layout
	// and keeps its status there, and the run measures how long a new
	// epoch takes to reach them all), "file" (the layout file, SIGHUP to
	// reload), or "" for etcd when it is installed, else the file.
	LayoutStore string
	// Epochs, on etcd, is the number of epochs published to time their
	// propagation (0: 20).
	Epochs int

	// Dir is where the temporary directory is made ("": the system's).
	Dir string
	// Keep keeps the temporary directory (the node's data, its log).
	Keep bool
	// NodeFlags are added to the node's command line, after the
	// benchmark's own flags, which they override (see
	// examples/indexer's flags).
	NodeFlags []string

	// Exe is the program run as the node and the baseline, with
	// ExeArgs, then [ChildCommand] and the child's arguments; [Main]
	// handles those. Required.
	Exe     string
	ExeArgs []string
	// Logger receives the progress (nil: discard).
	Logger *slog.Logger
}

// DefaultConfig returns the defaults: 10M multihashes of ordinary ads
// from 4 publishers, the raw baseline, 3,000 finds timed with 1 and 64
// clients, 1,000 finds/s during ingest, and the node run again with
// queries first off.
func DefaultConfig() Config {
	return Config{
		Multihashes: DefaultMultihashes,
		Shape:       ShapeAds,
		Publishers:  DefaultPublishers,
		Seed:        1,
		Samples:     DefaultSamples,
		Clients:     DefaultClients,
		ProbeRate:   DefaultProbeRate,
		Status:      DefaultStatus,
		Raw:         true,
		Unpaced:     true,
		// Only with Join.
		JoinBaseline: true,
	}
}

// normalize fills the shape's defaults and checks c.
func (c Config) normalize() (Config, error) {
	switch c.Shape {
	case ShapeAds:
		if c.MhsPerAd == 0 {
			c.MhsPerAd = DefaultMhsPerAd
		}
		if c.ChunkSize == 0 {
			c.ChunkSize = DefaultChunkSize
		}
	case ShapeContexts:
		if c.MhsPerAd == 0 {
			c.MinMhsPerAd, c.MhsPerAd = DefaultContextMinMhs, DefaultContextMaxMhs
		}
		if c.ChunkSize == 0 {
			c.ChunkSize = DefaultChunkSize
		}
	default:
		return c, fmt.Errorf("shape %q: want %s or %s", c.Shape, ShapeAds, ShapeContexts)
	}
	if c.MinMhsPerAd == 0 {
		c.MinMhsPerAd = c.MhsPerAd
	}
	switch {
	case c.Multihashes == 0 && c.Contexts <= 0:
		return c, errors.New("no multihashes: want -mh or -contexts above 0")
	case c.Publishers < 1:
		return c, fmt.Errorf("publishers %d: want 1 or more", c.Publishers)
	case c.MinMhsPerAd < 1 || c.MinMhsPerAd > c.MhsPerAd:
		return c, fmt.Errorf("multihashes per ad %d to %d: want 1 <= min <= max", c.MinMhsPerAd, c.MhsPerAd)
	case c.Samples < 1 || c.Clients < 1:
		return c, fmt.Errorf("samples %d, clients %d: want 1 or more", c.Samples, c.Clients)
	case c.ProbeRate < 0 || c.Status <= 0:
		return c, fmt.Errorf("probe rate %v, status %v: want 0 or more, and a positive interval", c.ProbeRate, c.Status)
	case c.Exe == "":
		return c, errors.New("no executable to run the node from")
	case c.Sharded < 0 || c.ShardBatchBytes < 0 || c.Replication < 0:
		return c, fmt.Errorf("sharded %d, replication %d, batch bytes %d: want 0 or more", c.Sharded, c.Replication, c.ShardBatchBytes)
	case c.LayoutStore != "" && c.LayoutStore != "etcd" && c.LayoutStore != "file":
		return c, fmt.Errorf("layout store %q: want etcd, file or empty", c.LayoutStore)
	case c.JoinAfter < 0:
		return c, fmt.Errorf("join after %v: want 0 or more", c.JoinAfter)
	case c.Epochs < 0:
		return c, fmt.Errorf("epochs %d: want 0 or more", c.Epochs)
	case c.Join && c.Sharded == 0:
		return c, errors.New("join: want -sharded N as well")
	}
	if c.Sharded > 0 {
		if c.Replication == 0 {
			c.Replication = DefaultReplication
		}
		if c.Sharded < c.Replication {
			return c, fmt.Errorf("sharded %d query nodes: want at least replication %d", c.Sharded, c.Replication)
		}
	}
	return c, nil
}

// adsPerPublisher is the number of ads of each publisher's chain.
func (c Config) adsPerPublisher() int {
	if c.Contexts > 0 {
		return max(1, c.Contexts/c.Publishers)
	}
	mean := float64(c.MinMhsPerAd+c.MhsPerAd) / 2
	return max(1, int(math.Ceil(float64(c.Multihashes)/float64(c.Publishers)/mean)))
}

// parseCount reads a count such as 20000, 20k, 10M, 1.5M or 1G.
func parseCount(s string) (uint64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult = 1e3
	case strings.HasSuffix(s, "M"):
		mult = 1e6
	case strings.HasSuffix(s, "G"):
		mult = 1e9
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f*mult > 1e15 {
		return 0, fmt.Errorf("count %q: want a number such as 20000, 20k, 10M", s)
	}
	return uint64(math.Round(f * mult)), nil
}

// flags parses the command line of the benchmark into c; arguments after
// "--" are node flags.
func (c *Config) flags(args []string, stderr io.Writer) error {
	if i := slices.Index(args, "--"); i >= 0 {
		c.NodeFlags = append(c.NodeFlags, args[i+1:]...)
		args = args[:i]
	}
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scale [flags] [-- node flags]")
		fmt.Fprintln(fs.Output(), "Ingests generated, signed chains served over HTTP into an indexer node run as a child process, measures it and a raw Pebble baseline, and prints a table. Flags:")
		fs.PrintDefaults()
	}
	fs.Func("mh", "`count` of multihashes to ingest, such as 1M, 10M, 100M (default 10M)", func(s string) error {
		n, err := parseCount(s)
		c.Multihashes = n
		return err
	})
	fs.Func("contexts", "`count` of ads (one context each) instead of -mh, such as 10M with -shape contexts", func(s string) error {
		n, err := parseCount(s)
		c.Contexts = int(n)
		return err
	})
	fs.StringVar(&c.Shape, "shape", c.Shape, "`shape` of the chains: ads (10,000 multihashes per ad in chunks of 1,000) or contexts (1 to 16 multihashes per ad, one context each)")
	fs.IntVar(&c.Publishers, "publishers", c.Publishers, "`number` of publishers")
	fs.IntVar(&c.MhsPerAd, "mh-per-ad", c.MhsPerAd, "most multihashes per ad (0: the shape's)")
	fs.IntVar(&c.MinMhsPerAd, "min-mh-per-ad", c.MinMhsPerAd, "fewest multihashes per ad (0: -mh-per-ad, or the shape's)")
	fs.IntVar(&c.ChunkSize, "chunk", c.ChunkSize, "multihashes per entry chunk (0: 1,000)")
	fs.BoolVar(&c.DagCBOR, "dag-cbor", c.DagCBOR, "serve dag-cbor blocks instead of dag-json")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "`seed` of the chains")
	fs.IntVar(&c.Samples, "samples", c.Samples, "finds timed after ingest (1 client; twice as many with -clients)")
	fs.IntVar(&c.Clients, "clients", c.Clients, "concurrent keep-alive find clients")
	fs.Float64Var(&c.ProbeRate, "probe-rate", c.ProbeRate, "finds per second during ingest (0: none)")
	fs.DurationVar(&c.Status, "status", c.Status, "interval of the progress lines")
	fs.BoolVar(&c.Raw, "raw", c.Raw, "run the raw Pebble baseline")
	fs.BoolVar(&c.Unpaced, "unpaced", c.Unpaced, "run the node again with -queries-first=false, the baseline of finds during ingest")
	fs.DurationVar(&c.Settle, "settle", c.Settle, "after ingest, wait up to this long for Pebble to owe no compaction and report the CPU with the settling (0: not)")
	fs.IntVar(&c.Sharded, "sharded", c.Sharded, "also run the keyspace-sharded layer: the node as an ingest node writing to this `number` of query nodes (0: not)")
	fs.IntVar(&c.Replication, "replication", c.Replication, "owners of each key with -sharded (0: 2)")
	fs.IntVar(&c.ShardBatchBytes, "shard-batch-bytes", c.ShardBatchBytes, "`bytes` of the batches the ingest node sends each query node with -sharded (0: 1 MiB)")
	fs.BoolVar(&c.Join, "join", c.Join, "with -sharded, then add one query node and measure the move")
	fs.BoolVar(&c.JoinBaseline, "join-baseline", c.JoinBaseline, "with -join, then add another query node that copies key by key, the baseline of the table-shipping join")
	fs.DurationVar(&c.JoinAfter, "join-after", c.JoinAfter, "with -join, wait this long after the ingest before the join, so that the query nodes' compactions settle")
	fs.StringVar(&c.LayoutStore, "layout-store", c.LayoutStore, "with -sharded, where the layout lives: etcd (a member the run starts; the run times epoch propagation), file, or \"\" for etcd when installed")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "on etcd, the `number` of epochs published to time their propagation (0: 20)")
	fs.StringVar(&c.Dir, "dir", c.Dir, "`directory` for the temporary data (default the system's)")
	fs.BoolVar(&c.Keep, "keep", c.Keep, "keep the temporary data and the node's log")
	fs.Func("node-flag", "a `flag` for the node, such as -node-flag=-log-level=debug (repeatable; also everything after --)", func(s string) error {
		c.NodeFlags = append(c.NodeFlags, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (node flags go after --)", fs.Args())
	}
	return nil
}
