//go:build linux

package pebble_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
)

// The records scale measure: how long a store with many provider contexts
// takes to open, and how much memory it holds then and after random
// lookups. It is a measure, not a test: it asserts only that the lookups
// find what was put, and runs only when asked:
//
//	INDEXKIT_RECORDS_SCALE=1000000 go test -run '^TestRecordsScale$' -v -timeout 2h ./store/pebble/
//
// It puts N contexts (one Put of one multihash each, spread over
// scaleProviders providers, as Boost and Curio publish one context per
// deal), closes the store, then opens it in a fresh child process, so that
// the memory figures are that process's alone (VmRSS and VmHWM from
// /proc/self/status), then looks up random contexts. It does so twice, in
// two children, since the first open of a database written by an older
// version also builds what it lacks. INDEXKIT_RECORDS_DIR names a directory to build in and
// keep (the build is skipped if it holds a store already), so that one
// database can be opened by two versions of this package.
const (
	scaleEnv       = "INDEXKIT_RECORDS_SCALE"
	scaleDirEnv    = "INDEXKIT_RECORDS_DIR"
	scaleChildEnv  = "INDEXKIT_RECORDS_CHILD"
	scaleProviders = 4
	scaleGets      = 100_000
)

func scaleValue(i int) store.Value {
	return store.Value{
		ProviderID: storetest.PeerID(fmt.Sprint("scale-provider-", i%scaleProviders)),
		ContextID:  fmt.Appendf(nil, "deal-%010d", i),
		Metadata:   []byte("\x80\x12scale-metadata-graphsync-0123456789"),
	}
}

func scaleMultihash(i int) []byte { return storetest.Multihash("records-scale", i) }

func TestRecordsScale(t *testing.T) {
	if dir := os.Getenv(scaleChildEnv); dir != "" {
		scaleChild(t, dir)
		return
	}
	n, err := strconv.Atoi(os.Getenv(scaleEnv))
	if err != nil || n <= 0 {
		t.Skipf("set %s to the number of contexts to measure", scaleEnv)
	}
	dir := os.Getenv(scaleDirEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*")); len(m) == 0 {
		scaleBuild(t, dir, n)
	} else {
		t.Logf("reusing the store in %s", dir)
	}
	for child := 1; child <= 2; child++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRecordsScale$", "-test.v")
		cmd.Env = append(os.Environ(), scaleChildEnv+"="+dir, scaleEnv+"="+strconv.Itoa(n))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("child: %v\n%s", err, out.String())
		}
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "records-scale ") {
				t.Logf("child %d: %s", child, strings.TrimPrefix(line, "records-scale "))
			}
		}
	}
}

func scaleBuild(t *testing.T, dir string, n int) {
	ctx := context.Background()
	s, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const workers = 2
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := s.Put(ctx, scaleValue(i), scaleMultihash(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// Flushed, so that the first child's open replays no log.
	if err := s.Pebble().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("records-scale build: %d contexts in %.1fs", n, time.Since(start).Seconds())
}

// procStatus returns VmRSS and VmHWM of this process, in bytes.
func procStatus(t *testing.T) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

func scaleChild(t *testing.T, dir string) {
	ctx := context.Background()
	n, err := strconv.Atoi(os.Getenv(scaleEnv))
	if err != nil {
		t.Fatal(err)
	}
	report := func(what string) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, hwm := procStatus(t)
		fmt.Printf("records-scale %s: VmRSS %.1f MiB, VmHWM %.1f MiB, Go heap in use %.1f MiB\n",
			what, float64(rss)/(1<<20), float64(hwm)/(1<<20), float64(ms.HeapInuse)/(1<<20))
	}
	report("child start")
	start := time.Now()
	s, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("records-scale open of %d contexts: %.3fs\n", n, time.Since(start).Seconds())
	report("after open")
	r := rand.New(rand.NewPCG(1, 2))
	start = time.Now()
	for range scaleGets {
		i := r.IntN(n)
		vals, err := s.Get(ctx, scaleMultihash(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != 1 || !vals[0].Equal(scaleValue(i)) {
			t.Fatalf("Get of context %d: %v", i, vals)
		}
	}
	fmt.Printf("records-scale %d random Gets: %.3fs\n", scaleGets, time.Since(start).Seconds())
	report(fmt.Sprintf("after %d Gets", scaleGets))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
