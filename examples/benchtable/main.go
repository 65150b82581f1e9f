package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	os.Exit(mainCode(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usage is what -h prints, and a wrong argument.
const usage = `usage: go test -bench ... 2>&1 | benchtable
Reads Go benchmark output on stdin and writes, per package, a table of each
backend against its raw engine (see go doc). It takes no flags.
`

// mainCode is the program on args and the three streams; it returns the
// exit status: 0 (also for -h), 1 for failed benchmarks or no results, 2
// for arguments it does not take.
func mainCode(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		fmt.Fprint(stderr, usage)
		return 0
	case len(args) > 0:
		fmt.Fprintf(stderr, "benchtable: unexpected arguments %q\n%s", args, usage)
		return 2
	}
	if err := run(stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 1
	}
	return 0
}

// run reads benchmark output from r and writes the tables to w. It returns
// an error when the input reports failures (after writing the tables of the
// results it did get) or holds no results at all.
func run(r io.Reader, w io.Writer) error {
	p := newParser()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		p.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	if err := writeTables(w, p.packages); err != nil {
		return fmt.Errorf("writing tables: %w", err)
	}
	if p.failed {
		return errors.New("benchmarks failed:\n" + strings.Join(p.report, "\n"))
	}
	if len(p.packages) == 0 {
		return errors.New("no benchmark results in the input")
	}
	return nil
}

// metric is one value-unit pair of a result line, such as 312000 mh/s.
type metric struct {
	value float64
	unit  string
}

// side holds one implementation's results for one row, averaged over
// repeated runs (-count).
type side struct {
	units []string // in the order of the result line
	sum   map[string]float64
	n     map[string]int
}

func (s *side) add(ms []metric) {
	if s.sum == nil {
		s.sum, s.n = map[string]float64{}, map[string]int{}
	}
	for _, m := range ms {
		if _, ok := s.sum[m.unit]; !ok {
			s.units = append(s.units, m.unit)
		}
		s.sum[m.unit] += m.value
		s.n[m.unit]++
	}
}

func (s *side) ok() bool { return s != nil && len(s.units) > 0 }

// get returns the mean of unit, if the side reported it.
func (s *side) get(unit string) (float64, bool) {
	if !s.ok() || s.n[unit] == 0 {
		return 0, false
	}
	return s.sum[unit] / float64(s.n[unit]), true
}

// rate returns the side's throughput: its first metric in a unit ending in
// "/s" other than MB/s, else MB/s, else operations per second from ns/op.
func (s *side) rate() (metric, bool) {
	if !s.ok() {
		return metric{}, false
	}
	for _, u := range s.units {
		if strings.HasSuffix(u, "/s") && u != "MB/s" {
			v, _ := s.get(u)
			return metric{v, u}, true
		}
	}
	if v, ok := s.get("MB/s"); ok {
		return metric{v, "MB/s"}, true
	}
	if v, ok := s.get("ns/op"); ok && v > 0 {
		return metric{1e9 / v, "ops/s"}, true
	}
	return metric{}, false
}

// cpu returns the side's first metric in a unit starting with "cpu-".
func (s *side) cpu() (metric, bool) {
	if !s.ok() {
		return metric{}, false
	}
	for _, u := range s.units {
		if strings.HasPrefix(u, "cpu-") {
			v, _ := s.get(u)
			return metric{v, u}, true
		}
	}
	return metric{}, false
}

// row is one Op and parameter set of a package: the store side and, when
// measured, the raw baseline.
type row struct {
	op, params string
	store, raw *side
}

// pkgResults is the table of one package, rows in order of first appearance.
type pkgResults struct {
	path  string
	rows  []*row
	index map[string]*row
}

type parser struct {
	packages []*pkgResults
	byPath   map[string]*pkgResults
	pkg      string   // from the last "pkg:" line
	pending  string   // a benchmark name whose result line has not come yet
	report   []string // failure lines and their context, in input order
	failed   bool     // a FAIL line was seen
	inReport bool     // the previous line went to the report
}

func newParser() *parser { return &parser{byPath: map[string]*pkgResults{}} }

func (p *parser) line(l string) {
	trimmed := strings.TrimSpace(l)
	indented := l != "" && (l[0] == ' ' || l[0] == '\t')
	switch {
	case isFailure(trimmed):
		p.report = append(p.report, l)
		p.failed, p.inReport = true, true
		return
	case isContext(l):
		p.report = append(p.report, l)
		p.inReport = true
		return
	case p.inReport && indented && trimmed != "":
		p.report = append(p.report, l) // the reason under --- FAIL:, or a long compile error
		return
	}
	p.inReport = false

	if path, ok := strings.CutPrefix(l, "pkg: "); ok {
		p.pkg, p.pending = strings.TrimSpace(path), ""
		return
	}
	fields := strings.Fields(l)
	if len(fields) == 0 {
		return
	}
	if strings.HasPrefix(fields[0], "Benchmark") && !indented {
		if ms, ok := parseMetrics(fields[1:]); ok {
			p.record(fields[0], ms)
			p.pending = ""
		} else {
			// The name alone (-v), or the name followed by log output that
			// the benchmark wrote before its result: the result comes later.
			p.pending = fields[0]
		}
		return
	}
	if p.pending != "" {
		if ms, ok := parseMetrics(fields); ok {
			p.record(p.pending, ms)
			p.pending = ""
		}
	}
}

// isFailure reports whether a trimmed line reports a failure of go test.
func isFailure(t string) bool {
	return t == "FAIL" || strings.HasPrefix(t, "FAIL\t") || strings.HasPrefix(t, "FAIL ") ||
		strings.HasPrefix(t, "--- FAIL:")
}

// compileError matches the errors of the go command and the compiler:
// "store/pebble/pebble.go:40:26: not enough arguments".
var compileError = regexp.MustCompile(`^[^\s:]+\.go:\d+(:\d+)?: `)

// isContext reports whether a line explains a failure: a panic, the
// "# package" header of a build failure, or a compile error. These lines
// are reported only when a FAIL line follows.
func isContext(l string) bool {
	return strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "# ") || compileError.MatchString(l)
}

// parseMetrics parses "N v1 u1 v2 u2 ...", the part of a result line after
// the benchmark name.
func parseMetrics(fields []string) ([]metric, bool) {
	if len(fields) < 3 || len(fields)%2 == 0 {
		return nil, false
	}
	if _, err := strconv.ParseUint(fields[0], 10, 64); err != nil {
		return nil, false
	}
	var ms []metric
	for i := 1; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return nil, false
		}
		if _, err := strconv.ParseFloat(fields[i+1], 64); err == nil {
			return nil, false // a unit is never a number
		}
		ms = append(ms, metric{v, fields[i+1]})
	}
	return ms, true
}

// splitName splits Benchmark<Op>/<params>/.../<impl>-<procs> into its parts.
// impl is "store" or "raw"; a name without either is a store result.
func splitName(name string) (op, params, impl string) {
	name = strings.TrimPrefix(name, "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 && i > strings.LastIndexByte(name, '/') {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i] // the -GOMAXPROCS suffix
		}
	}
	parts := strings.Split(name, "/")
	op, parts = parts[0], parts[1:]
	impl = "store"
	if n := len(parts); n > 0 && (parts[n-1] == "store" || parts[n-1] == "raw") {
		impl, parts = parts[n-1], parts[:n-1]
	}
	return op, strings.Join(parts, " "), impl
}

func (p *parser) record(name string, ms []metric) {
	pr := p.byPath[p.pkg]
	if pr == nil {
		pr = &pkgResults{path: p.pkg, index: map[string]*row{}}
		p.byPath[p.pkg] = pr
		p.packages = append(p.packages, pr)
	}
	op, params, impl := splitName(name)
	key := op + "\x00" + params
	r := pr.index[key]
	if r == nil {
		r = &row{op: op, params: params}
		pr.index[key] = r
		pr.rows = append(pr.rows, r)
	}
	s := &r.store
	if impl == "raw" {
		s = &r.raw
	}
	if *s == nil {
		*s = &side{}
	}
	(*s).add(ms)
}
