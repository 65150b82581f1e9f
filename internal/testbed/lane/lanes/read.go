package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// event is one JSON event of `go test -json` (cmd/test2json), with the
// build events of Go 1.24 and later (ImportPath, build-output, build-fail).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// summary is what read found.
type summary struct {
	packages    int      // packages that ended (passed, failed or had no tests)
	failed      []string // packages that failed, or did not build, in order
	integration []string // packages that hold integration-lane tests, sorted
}

// pkgState is what read keeps of a package until it ends.
type pkgState struct {
	tests       map[string][]string // output of each test, by name
	failedTests []string            // tests that failed, in the order they ended
	pkgOutput   []string            // output of the package itself (no test)
	integration bool
}

// read reads test2json events from in until EOF and writes to out what
// `go test` prints without -json. Lines that are not JSON (the go
// command's own messages) are copied through.
func read(in io.Reader, out io.Writer) (summary, error) {
	var sum summary
	pkgs := map[string]*pkgState{}
	integration := map[string]bool{}
	state := func(p string) *pkgState {
		s := pkgs[p]
		if s == nil {
			s = &pkgState{tests: map[string][]string{}}
			pkgs[p] = s
		}
		return s
	}
	events := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		events++
		switch e.Action {
		case "build-output":
			io.WriteString(out, e.Output)
			continue
		case "build-fail":
			continue // the package's fail event follows, with FailedBuild
		}
		if e.Package == "" {
			continue
		}
		s := state(e.Package)
		switch {
		case e.Action == "output" && e.Test != "":
			s.tests[e.Test] = append(s.tests[e.Test], e.Output)
			if strings.Contains(e.Output, lane.Marker) {
				s.integration = true
			}
		case e.Action == "output":
			s.pkgOutput = append(s.pkgOutput, e.Output)
		case e.Action == "fail" && e.Test != "":
			s.failedTests = append(s.failedTests, e.Test)
		case e.Action == "pass" && e.Test == "", e.Action == "skip" && e.Test == "", e.Action == "fail" && e.Test == "":
			sum.packages++
			if s.integration {
				integration[e.Package] = true
			}
			if e.Action == "fail" {
				sum.failed = append(sum.failed, e.Package)
				printFailure(out, e, s)
			} else {
				printLast(out, s.pkgOutput)
			}
			delete(pkgs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		return sum, fmt.Errorf("reading go test's output: %w", err)
	}
	if events == 0 {
		return sum, errors.New("no go test -json events on standard input")
	}
	// A package that started and never ended: go test was killed.
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		sum.failed = append(sum.failed, p)
		fmt.Fprintf(out, "FAIL\t%s\t(no result: go test ended before the package did)\n", p)
	}
	for p := range integration {
		sum.integration = append(sum.integration, p)
	}
	slices.Sort(sum.integration)
	return sum, nil
}

// printFailure writes the output of the failed tests of a package, then
// the package's own output, as go test does without -v.
func printFailure(out io.Writer, e event, s *pkgState) {
	for _, t := range s.failedTests {
		for _, o := range s.tests[t] {
			io.WriteString(out, o)
		}
	}
	for _, o := range s.pkgOutput {
		io.WriteString(out, o)
	}
	if len(s.pkgOutput) == 0 {
		if e.FailedBuild != "" {
			fmt.Fprintf(out, "FAIL\t%s [build failed]\n", e.Package)
		} else {
			fmt.Fprintf(out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	}
}

// printLast writes the last line of a package's own output: "ok ...",
// or "?   ... [no test files]".
func printLast(out io.Writer, lines []string) {
	if len(lines) > 0 {
		io.WriteString(out, lines[len(lines)-1])
	}
}
