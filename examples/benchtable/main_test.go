package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden runs benchtable on testdata/input.txt, which has two packages,
// a result split by log output, results repeated by -count, -v name lines,
// a row without a raw baseline and one without custom metrics, and compares
// the tables with testdata/input.golden.
func TestGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(bytes.NewReader(in), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	golden := filepath.Join("testdata", "input.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s--- want\n%s", golden, out.Bytes(), want)
	}
}

func TestFailure(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "fail.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run(bytes.NewReader(in), &out)
	if err == nil {
		t.Fatal("run succeeded on failing benchmarks")
	}
	for _, want := range []string{
		"--- FAIL: BenchmarkPut/batch=1000/raw-8",
		"    bench_test.go:41: open: resource temporarily unavailable",
		"FAIL\tgithub.com/indexkit/indexkit/store/leveldb\t1.234s",
		"# github.com/indexkit/indexkit/store/pebble",
		"store/pebble/pebble.go:40:26: not enough arguments in call to kv.Open",
		"\twant (kv.Engine, string, kv.Layout)",
		"FAIL\tgithub.com/indexkit/indexkit/store/pebble [build failed]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "exit status") {
		t.Errorf("error reports a line that is no failure:\n%v", err)
	}
	// The results before the failure are still shown.
	if !strings.Contains(out.String(), "212.0K mh/s") {
		t.Errorf("tables before the failure are missing:\n%s", out.String())
	}
}

// TestContextWithoutFailure checks that lines that look like failure context
// do not fail a run without FAIL lines.
func TestContextWithoutFailure(t *testing.T) {
	in := "pkg: example.com/x/memory\n" +
		"# not a build header, just a log line\n" +
		"main.go:12: a log line with a file position\n" +
		"BenchmarkGet/store-8 1 100 ns/op 5 gets/s\n" +
		"PASS\n"
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestNoResults(t *testing.T) {
	var out bytes.Buffer
	if err := run(strings.NewReader("PASS\nok  \tgithub.com/x\t0.1s\n"), &out); err == nil {
		t.Error("run succeeded on input without results")
	}
}

func TestSplitName(t *testing.T) {
	tests := []struct{ name, op, params, impl string }{
		{"BenchmarkPut/batch=1000/store-8", "Put", "batch=1000", "store"},
		{"BenchmarkPut/batch=1000/raw-16", "Put", "batch=1000", "raw"},
		{"BenchmarkPut/batch=1000/raw", "Put", "batch=1000", "raw"}, // GOMAXPROCS=1
		{"BenchmarkGet/hit/values=3/store-8", "Get", "hit values=3", "store"},
		{"BenchmarkGet-8", "Get", "", "store"},
		{"BenchmarkGet/miss-8", "Get", "miss", "store"},
		{"BenchmarkPut/range=1-3/store-4", "Put", "range=1-3", "store"},
	}
	for _, tt := range tests {
		op, params, impl := splitName(tt.name)
		if op != tt.op || params != tt.params || impl != tt.impl {
			t.Errorf("splitName(%q) = %q, %q, %q; want %q, %q, %q", tt.name, op, params, impl, tt.op, tt.params, tt.impl)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{"1 3205128000 ns/op 4.100 cpu-s/Mmh 312000 mh/s", true},
		{"100 2301 ns/op 16 B/op 1 allocs/op", true},
		{"2024/11/26 01:02:03 pebble: compaction", false},
		{"1 3205128000 ns/op 4.1", false},
		{"1 3205128000 12", false},
		{"", false},
	}
	for _, tt := range tests {
		if _, ok := parseMetrics(strings.Fields(tt.line)); ok != tt.ok {
			t.Errorf("parseMetrics(%q) ok = %v, want %v", tt.line, ok, tt.ok)
		}
	}
}

func TestHuman(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{0.0123, "0.0123"},
		{4.1, "4.10"},
		{61, "61.0"},
		{120, "120"},
		{999.4, "999"},
		{999.6, "1.00K"},
		{312400, "312.4K"},
		{999960, "1.00M"},
		{1231000, "1.23M"},
		{2.5e9, "2.50G"},
		{99_960, "100.0K"},
		{-312400, "-312.4K"},
	}
	for _, tt := range tests {
		if got := human(tt.v); got != tt.want {
			t.Errorf("human(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestHelp: -h exits 0 after the usage and what the program does, as
// every other binary's -h; an argument it does not take exits 2.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	if code := mainCode([]string{"-h"}, strings.NewReader(""), io.Discard, &out); code != 0 || !strings.Contains(out.String(), "Reads Go benchmark output") {
		t.Errorf("-h: status %d, %q; want 0 and the description", code, out.String())
	}
	if code := mainCode([]string{"extra"}, strings.NewReader(""), io.Discard, io.Discard); code != 2 {
		t.Errorf("an argument: status %d, want 2", code)
	}
}
