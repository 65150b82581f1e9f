package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/httpserve"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{fmt.Errorf("parse: %w", flag.ErrHelp), 0, ""},
		{errors.New("boom"), 1, "prog: boom\n"},
	} {
		var buf bytes.Buffer
		if code := ExitCode("prog", tc.err, &buf); code != tc.code || buf.String() != tc.stderr {
			t.Errorf("ExitCode(%v) = %d, stderr %q; want %d, %q", tc.err, code, buf.String(), tc.code, tc.stderr)
		}
	}
}

func TestParseLevel(t *testing.T) {
	for s, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo, "INFO": slog.LevelInfo,
		"warn": slog.LevelWarn, "error": slog.LevelError, "info+2": slog.LevelInfo + 2,
	} {
		if got, err := ParseLevel(s); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "verbose", "info+", "3"} {
		if got, err := ParseLevel(s); err == nil {
			t.Errorf("ParseLevel(%q) = %v, nil; want an error", s, got)
		}
	}
}

func TestNewLoggerAndLogListening(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelWarn)
	LogListening(log, "find", "127.0.0.1:1") // info: below the level
	if buf.Len() != 0 {
		t.Fatalf("logged below the level: %q", buf.String())
	}
	log = NewLogger(&buf, slog.LevelInfo)
	LogListening(log, "find", "127.0.0.1:1")
	if got := buf.String(); !strings.Contains(got, " level=INFO msg=listening name=find addr=127.0.0.1:1\n") ||
		!strings.HasPrefix(got, "time=") {
		t.Errorf("log line %q", got)
	}
}

type testConfig struct {
	Name  string
	Count int
}

func TestDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       testConfig
		err, only  string // "" : no error; of DecodeJSON, DecodeJSONOnly
	}{
		{name: "ok", data: `{"Name":"a","Count":2}`, want: testConfig{"a", 2}},
		{name: "trailing white space", data: "{\"Name\":\"a\"}\n\t \n", want: testConfig{Name: "a"}},
		{name: "partial keeps the rest", data: `{"Count":3}`, want: testConfig{Name: "def", Count: 3}},
		{name: "unknown field", data: `{"Name":"a","Colour":"red"}`, err: `unknown field "Colour"`, only: `unknown field "Colour"`},
		{name: "wrong type", data: `{"Count":"x"}`, err: "cannot unmarshal", only: "cannot unmarshal"},
		{name: "syntax", data: `{"Name":`, err: "unexpected EOF", only: "unexpected EOF"},
		{name: "empty", data: ``, err: "EOF", only: "EOF"},
		{name: "second value", data: `{"Name":"a"} {"Name":"b"}`, want: testConfig{Name: "a"}, only: ErrTrailingData.Error()},
		{name: "garbage after", data: `{"Name":"a"}x`, want: testConfig{Name: "a"}, only: ErrTrailingData.Error()},
		{name: "stray brace after", data: `{"Name":"a"}}`, want: testConfig{Name: "a"}, only: ErrTrailingData.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []struct {
				name   string
				decode func([]byte, any) error
				err    string
			}{{"DecodeJSON", DecodeJSON, tc.err}, {"DecodeJSONOnly", DecodeJSONOnly, tc.only}} {
				got := testConfig{Name: "def"}
				err := f.decode([]byte(tc.data), &got)
				switch {
				case f.err == "" && err != nil:
					t.Errorf("%s: %v", f.name, err)
				case f.err != "" && (err == nil || !strings.Contains(err.Error(), f.err)):
					t.Errorf("%s: error %v, want one with %q", f.name, err, f.err)
				case err == nil && got != tc.want:
					t.Errorf("%s: %+v, want %+v", f.name, got, tc.want)
				}
			}
		})
	}
	if err := DecodeJSONOnly([]byte(`{} 1`), &testConfig{}); !errors.Is(err, ErrTrailingData) {
		t.Errorf("DecodeJSONOnly: %v, want ErrTrailingData", err)
	}
}

func defaultTestConfig() testConfig { return testConfig{Name: "def", Count: 1} }

func testFlags(c *testConfig, path *string, output io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(path, "config", "", "config `file`")
	fs.StringVar(&c.Name, "name", c.Name, "name")
	fs.IntVar(&c.Count, "count", c.Count, "count")
	return fs
}

func writeFile(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	file := writeFile(t, `{"Name":"file","Count":5}`)
	partial := writeFile(t, `{"Count":7}`)
	unknown := writeFile(t, `{"Nme":"x"}`)
	trailing := writeFile(t, `{"Name":"file"} {}`)
	for _, tc := range []struct {
		name   string
		args   []string
		decode func([]byte, any) error
		want   testConfig
		err    string
	}{
		{name: "defaults", want: testConfig{"def", 1}},
		{name: "flags", args: []string{"-name", "x", "-count", "3"}, want: testConfig{"x", 3}},
		{name: "file", args: []string{"-config", file}, want: testConfig{"file", 5}},
		{name: "flags over file, either order", args: []string{"-count", "9", "-config", file}, want: testConfig{"file", 9}},
		{name: "file over defaults only where set", args: []string{"-config", partial}, want: testConfig{"def", 7}},
		{name: "unknown field", args: []string{"-config", unknown}, err: "-config " + unknown + `: json: unknown field "Nme"`},
		{name: "trailing data ignored", args: []string{"-config", trailing}, want: testConfig{"file", 1}},
		{name: "trailing data refused", args: []string{"-config", trailing}, decode: DecodeJSONOnly,
			err: "-config " + trailing + ": data after the configuration object"},
		{name: "missing file", args: []string{"-config", filepath.Join(t.TempDir(), "none.json")}, err: "-config: open "},
		{name: "arguments", args: []string{"-name", "x", "extra"}, err: `unexpected arguments ["extra"]`},
		{name: "bad flag", args: []string{"-nope"}, err: "flag provided but not defined: -nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decode := tc.decode
			if decode == nil {
				decode = DecodeJSON
			}
			var stderr bytes.Buffer
			got, err := LoadConfig(tc.args, &stderr, defaultTestConfig, testFlags, decode)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want one starting %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("LoadConfig(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr %q", stderr.String())
			}
		})
	}
	var stderr bytes.Buffer
	if _, err := LoadConfig([]string{"-h"}, &stderr, defaultTestConfig, testFlags, DecodeJSON); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(stderr.String(), "-count") {
		t.Errorf("-h wrote %q, want the usage", stderr.String())
	}
}

// server is a server of httpserve.NewServer run by httpserve.Serve under
// an errgroup, on a listener of Listen.
type server struct {
	addr   string
	ln     net.Listener
	srv    *http.Server
	cancel context.CancelFunc // stops it
	eg     *errgroup.Group
	log    *syncBuffer // what the server logged
}

// serve starts h with httpserve.NewServer and Serve on a Listen listener on
// 127.0.0.1:0 with the default caps; edit, if not nil, changes the server
// before it starts (shorter deadlines).
func serve(t *testing.T, h http.Handler, timeout time.Duration, edit func(*http.Server)) *server {
	t.Helper()
	return serveOn(t, h, timeout, DefaultMaxConns, DefaultMaxConnsPerIP, edit)
}

func serveOn(t *testing.T, h http.Handler, timeout time.Duration, maxConns, perIP int, edit func(*http.Server)) *server {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", maxConns, perIP)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	eg, ctx := errgroup.WithContext(ctx)
	s := &server{addr: ln.Addr().String(), ln: ln, cancel: cancel, eg: eg, log: &syncBuffer{}}
	s.srv = httpserve.NewServer(h, NewLogger(s.log, slog.LevelInfo))
	if edit != nil {
		edit(s.srv)
	}
	httpserve.Serve(ctx, eg, "test", s.srv, ln, timeout)
	t.Cleanup(func() { cancel(); eg.Wait() })
	return s
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServeGracefulShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		fmt.Fprint(w, "ok")
	}), 5*time.Second, nil)
	addr, cancel, eg := s.addr, s.cancel, s.eg
	get := func(path string) (string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := get("/"); err != nil || body != "ok" {
		t.Fatalf("GET / = %q, %v", body, err)
	}
	slow := make(chan error, 1)
	go func() {
		body, err := get("/slow")
		if err == nil && body != "ok" {
			err = fmt.Errorf("body %q", body)
		}
		slow <- err
	}()
	<-started
	cancel()
	// The request in flight finishes within the timeout: a clean stop.
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("request in flight: %v", err)
	}
	if err := eg.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if _, err := get("/"); err == nil {
		t.Error("still serving after shutdown")
	}
}

func TestServeShutdownBounded(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			// Reads a body that never ends, until the connection is cut.
			io.Copy(io.Discard, r.Body)
			return
		}
		close(started)
		select {
		case <-release:
		case <-r.Context().Done(): // Close cuts the connection
		}
	}), 100*time.Millisecond, nil)
	go func() {
		if resp, err := http.Get("http://" + s.addr + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	// A client still sending its body when the shutdown begins: the read
	// deadline (30s) is far, so only the shutdown's Close ends it.
	slow := slowBody(t, "127.0.0.1", s.addr, "/body", 20*time.Millisecond)
	<-started
	waitFor(t, "the slow body to be read", func() bool { return slow.sent.Load() > 5 })
	begin := time.Now()
	s.cancel()
	if err := s.eg.Wait(); err != nil {
		t.Errorf("Wait: %v, want nil: a forced shutdown is not an error", err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("shutdown took %v with a 100ms timeout", took)
	}
	select {
	case <-slow.closed:
	case <-time.After(5 * time.Second):
		t.Error("the slow body's connection is still open after the shutdown")
	}
	if got := s.log.String(); !strings.Contains(got, "level=WARN msg=\"test server: connections still busy 100ms after shutdown began; closed them\"") {
		t.Errorf("log %q, want the forced shutdown", got)
	}
}

func TestServeListenerError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // Serve fails at once
	eg, ctx := errgroup.WithContext(context.Background())
	httpserve.Serve(ctx, eg, "find", &http.Server{}, ln, time.Second)
	if err := eg.Wait(); err == nil || !strings.HasPrefix(err.Error(), "find server: ") {
		t.Errorf("Wait: %v, want a find server error", err)
	}
}

// TestMain lets TestMainProcess run Main in a child process: with
// CLI_TEST_MAIN set, the test binary is a program that fails, asks for
// help, or waits for SIGTERM.
func TestMain(m *testing.M) {
	switch os.Getenv("CLI_TEST_MAIN") {
	case "":
		os.Exit(m.Run())
	case "fail":
		Main("prog", func(context.Context, []string, io.Writer) error { return errors.New("boom") })
	case "help":
		Main("prog", func(context.Context, []string, io.Writer) error { return flag.ErrHelp })
	case "signal":
		Main("prog", func(ctx context.Context, args []string, stderr io.Writer) error {
			fmt.Fprintln(stderr, "ready", args)
			<-ctx.Done()
			fmt.Fprintln(stderr, "stopped:", context.Cause(ctx))
			return nil
		})
	}
	os.Exit(3) // Main returned: exit 3 tells it from os.Exit(0)
}

func TestMainProcess(t *testing.T) {
	lane.Integration(t, "re-executes the test binary")
	run := func(mode string, stop bool) (string, int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$", "arg")
		cmd.Env = append(os.Environ(), "CLI_TEST_MAIN="+mode)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if !stop {
			cmd.Run()
			return stderr.String(), cmd.ProcessState.ExitCode()
		}
		pr, pw := io.Pipe()
		cmd.Stderr = io.MultiWriter(&stderr, pw)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(pr).ReadString('\n')
		go io.Copy(io.Discard, pr)
		if !strings.HasPrefix(line, "ready") {
			t.Fatalf("child: %q", line)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		pw.Close()
		return stderr.String(), cmd.ProcessState.ExitCode()
	}
	if out, code := run("fail", false); code != 1 || out != "prog: boom\n" {
		t.Errorf("fail: exit %d, stderr %q", code, out)
	}
	if out, code := run("help", false); code != 0 || out != "" {
		t.Errorf("help: exit %d, stderr %q", code, out)
	}
	// A clean stop returns from Main: the child then exits 3.
	if out, code := run("signal", true); code != 3 || !strings.Contains(out, " arg]\nstopped: ") {
		t.Errorf("SIGTERM: exit %d, stderr %q", code, out)
	}
}
