package querycmd_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/querycmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Flags that cannot run are refused before anything is bound, the error
// naming the flag or the field.
func TestFlagErrors(t *testing.T) {
	t.Setenv(querycmd.EnvToken, "")
	layout := writeLayout(t, t.TempDir(), 1, "http://127.0.0.1:1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-layout", layout}, "Config.Name must not be empty"},
		{[]string{"-name", "q1", "-layout", layout, "-store", "bolt"}, `Config.Store "bolt"`},
		{[]string{"-name", "q1", "-layout", layout, "-listen", "0.0.0.0:0"}, "-listen 0.0.0.0:0: the shard API off loopback needs a token"},
		{[]string{"-name", "q1", "-layout", layout, "-listen", "127.0.0.1:0", "-pprof", "0.0.0.0:0"}, "-pprof 0.0.0.0:0: not a loopback address"},
		{[]string{"-name", "q1", "-layout", layout, "-token-file", filepath.Join(t.TempDir(), "none")}, "-token-file"},
		{[]string{"-name", "q1", "extra"}, "unexpected arguments"},
		{[]string{"-log-level", "loud"}, "log-level"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		err := querycmd.Main(ctx, append([]string{"-dir", t.TempDir(), "-store", "memory"}, tc.args...), io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// writeLayout saves a one-node layout of the given epoch naming q1 at url.
func writeLayout(t *testing.T, dir string, epoch uint64, url string) string {
	t.Helper()
	path := filepath.Join(dir, "layout.json")
	l := keyspace.Layout{Epoch: epoch, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: url}}, Current: []string{"q1"}}
	if err := keyspace.Save(path, l); err != nil {
		t.Fatal(err)
	}
	return path
}

// The program serves the node and the profiles on the ports it logs,
// re-reads the layout on SIGHUP, and stops cleanly when its context ends.
func TestMainRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	layout := writeLayout(t, dir, 1, "http://127.0.0.1:1")
	tap := logtap.New(nil)
	done := make(chan error, 1)
	go func() {
		done <- querycmd.Main(ctx, []string{"-name", "q1", "-layout", layout, "-dir", filepath.Join(dir, "q1"),
			"-store", "memory", "-listen", "127.0.0.1:0", "-pprof", "127.0.0.1:0", "-log-level", "debug"}, tap)
		tap.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Main: %v", err)
		}
		if t.Failed() {
			t.Logf("log:\n%s", strings.Join(tap.Lines(), "\n"))
		}
	}()
	addr, err := tap.Addr(ctx, "query")
	if err != nil {
		t.Fatal(err)
	}
	pprofAddr, err := tap.Addr(ctx, "pprof")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tap.WaitMsg(ctx, "starting"); err != nil {
		t.Fatal(err)
	}
	epoch := func() uint64 {
		t.Helper()
		resp, err := http.Get("http://" + addr + keyspace.PathStatus)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st keyspace.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Epoch
	}
	if e := epoch(); e != 1 {
		t.Fatalf("epoch %d at start, want 1", e)
	}

	writeLayout(t, dir, 2, "http://127.0.0.1:1")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	for e := uint64(0); e != 2; e = epoch() {
		if wctx.Err() != nil {
			t.Fatalf("epoch %d after SIGHUP with epoch 2 in the file", e)
		}
		time.Sleep(10 * time.Millisecond)
	}

	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /debug/pprof/: %s", resp.Status)
	}
}
