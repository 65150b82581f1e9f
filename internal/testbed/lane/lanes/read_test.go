package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// events builds a test2json stream from its lines.
func events(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestRead(t *testing.T) {
	in := events(
		"go: downloading example.com/x v1.0.0",
		`{"Action":"start","Package":"m/a"}`,
		`{"Action":"run","Package":"m/a","Test":"TestUnit"}`,
		`{"Action":"output","Package":"m/a","Test":"TestUnit","Output":"=== RUN   TestUnit\n"}`,
		`{"Action":"pass","Package":"m/a","Test":"TestUnit","Elapsed":0.1}`,
		`{"Action":"output","Package":"m/a","Output":"PASS\n"}`,
		`{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t0.2s\n"}`,
		`{"Action":"pass","Package":"m/a","Elapsed":0.2}`,
		// m/b holds a test of the integration lane, skipped under -short.
		`{"Action":"start","Package":"m/b"}`,
		`{"Action":"output","Package":"m/b","Test":"TestPool","Output":"    pool_test.go:9: `+lane.Marker+`: starts a pool; -short (make check) skips it\n"}`,
		`{"Action":"skip","Package":"m/b","Test":"TestPool"}`,
		`{"Action":"output","Package":"m/b","Output":"ok  \tm/b\t0.1s\n"}`,
		`{"Action":"pass","Package":"m/b","Elapsed":0.1}`,
		// m/c runs a smaller form under -short, and fails.
		`{"Action":"start","Package":"m/c"}`,
		`{"Action":"output","Package":"m/c","Test":"TestModel","Output":"    model_test.go:5: `+lane.Marker+` runs this in full: 10,000 steps\n"}`,
		`{"Action":"pass","Package":"m/c","Test":"TestModel"}`,
		`{"Action":"output","Package":"m/c","Test":"TestBroken","Output":"    broken_test.go:7: want 1, got 2\n"}`,
		`{"Action":"output","Package":"m/c","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}`,
		`{"Action":"fail","Package":"m/c","Test":"TestBroken"}`,
		`{"Action":"output","Package":"m/c","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"m/c","Output":"FAIL\tm/c\t0.3s\n"}`,
		`{"Action":"fail","Package":"m/c","Elapsed":0.3}`,
		// m/d does not build.
		`{"ImportPath":"m/d","Action":"build-output","Output":"d.go:3:1: syntax error\n"}`,
		`{"ImportPath":"m/d","Action":"build-fail"}`,
		`{"Action":"start","Package":"m/d"}`,
		`{"Action":"output","Package":"m/d","Output":"FAIL\tm/d [build failed]\n"}`,
		`{"Action":"fail","Package":"m/d","Elapsed":0,"FailedBuild":"m/d"}`,
		// m/e has no test files.
		`{"Action":"start","Package":"m/e"}`,
		`{"Action":"output","Package":"m/e","Output":"?   \tm/e\t[no test files]\n"}`,
		`{"Action":"skip","Package":"m/e","Elapsed":0}`,
		// m/f started and never ended: go test was killed.
		`{"Action":"start","Package":"m/f"}`,
	)
	var out bytes.Buffer
	sum, err := read(strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m/b", "m/c"}; !slices.Equal(sum.integration, want) {
		t.Errorf("integration = %q, want %q", sum.integration, want)
	}
	if want := []string{"m/c", "m/d", "m/f"}; !slices.Equal(sum.failed, want) {
		t.Errorf("failed = %q, want %q", sum.failed, want)
	}
	if sum.packages != 5 {
		t.Errorf("packages = %d, want 5", sum.packages)
	}
	got := out.String()
	for _, w := range []string{
		"go: downloading example.com/x v1.0.0\n",
		"ok  \tm/a\t0.2s\n", "ok  \tm/b\t0.1s\n",
		"broken_test.go:7: want 1, got 2\n--- FAIL: TestBroken", "FAIL\tm/c\t0.3s\n",
		"d.go:3:1: syntax error\n", "FAIL\tm/d [build failed]\n",
		"?   \tm/e\t[no test files]\n",
		"FAIL\tm/f\t(no result",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
	for _, nw := range []string{"=== RUN   TestUnit", "10,000 steps", "starts a pool"} {
		if strings.Contains(got, nw) {
			t.Errorf("output holds %q, the output of a test that did not fail:\n%s", nw, got)
		}
	}
}

// No events at all (go test did not run, or ran without -json) is an
// error, not an empty success.
func TestReadNoEvents(t *testing.T) {
	if _, err := read(strings.NewReader("go: no packages to test\n"), &bytes.Buffer{}); err == nil {
		t.Fatal("read of no events succeeded")
	}
}

// The command's exit status: 0 when every package passed, 1 when one
// failed, 2 when it could not read; the list is written in each of the
// first two cases.
func TestExitStatus(t *testing.T) {
	if os.Getenv("LANES_RUN_MAIN") == "1" {
		os.Args = []string{"lanes", "-integration", os.Getenv("LANES_LIST")}
		main()
		os.Exit(0)
	}
	pass := events(`{"Action":"start","Package":"m/b"}`,
		`{"Action":"output","Package":"m/b","Test":"TestPool","Output":"`+lane.Marker+`: starts a pool\n"}`,
		`{"Action":"output","Package":"m/b","Output":"ok  \tm/b\t0.1s\n"}`,
		`{"Action":"pass","Package":"m/b","Elapsed":0.1}`)
	fail := pass + events(`{"Action":"start","Package":"m/c"}`, `{"Action":"fail","Package":"m/c","Elapsed":0.1}`)
	for _, tc := range []struct {
		name, in string
		code     int
		list     string
	}{
		{"pass", pass, 0, "m/b\n"},
		{"fail", fail, 1, "m/b\n"},
		{"no events", "not json\n", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := filepath.Join(t.TempDir(), "integration.txt")
			cmd := exec.Command(os.Args[0], "-test.run=^TestExitStatus$")
			cmd.Env = append(os.Environ(), "LANES_RUN_MAIN=1", "LANES_LIST="+list)
			cmd.Stdin = strings.NewReader(tc.in)
			out, err := cmd.CombinedOutput()
			code := 0
			if err != nil {
				ee, ok := err.(*exec.ExitError)
				if !ok {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			b, _ := os.ReadFile(list)
			if string(b) != tc.list {
				t.Errorf("list %q, want %q", b, tc.list)
			}
		})
	}
}
