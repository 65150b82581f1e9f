package localpool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/localpool/rolemain"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/scatter/web"
)

// TestMain serves the role subcommand (processes mode re-executes this
// test binary as each role) and checks that no goroutine outlives the
// tests (but goleveldb's mpoolDrain, which outlives a closed DB for up
// to a second).
func TestMain(m *testing.M) {
	rolemain.Run()
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/syndtr/goleveldb/leveldb.(*DB).mpoolDrain"))
}

// small is a pool that publishes 4 ads of 5 multihashes per publisher,
// fast, then stops producing.
func small(t *testing.T, processes bool, store string) localpool.Config {
	return localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: store, Processes: processes,
		Interval: 100 * time.Millisecond, Entries: 5, MaxAds: 4, PollInterval: 200 * time.Millisecond,
		Log: testLog{t}, LogLevel: 4, // warnings and errors only
	}
}

// testLog writes the roles' log lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(string(b[:len(b)-1]))
	return len(b), nil
}

// run starts cfg, waits until the front end answers the whole truth, and
// closes the pool.
func run(t *testing.T, cfg localpool.Config) *localpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := localpool.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	_, err = p.WaitFor(ctx, "every publisher at 4 ads", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			if ps.Ads != 4 {
				return false
			}
		}
		return true
	})
	var c localpool.Check
	if err == nil {
		c, err = p.WaitComplete(ctx)
	}
	if err != nil {
		for _, r := range p.Roles() {
			t.Logf("%s:\n%s", r, lines(p.LogLines(r)))
		}
		t.Fatal(err)
	}
	if c.Multihashes != 2*4*5 { // no removal before the 10th ad
		t.Fatalf("check %v: want the 40 multihashes of 2 publishers × 4 ads × 5", c)
	}
	s, err := p.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range s.Publishers {
		if len(ps.Owners) != 1 || ps.Lag != 0 || ps.Ads != 4 {
			t.Errorf("publisher %+v: want one owner, lag 0, 4 ads", ps)
		}
	}
	sameCounts(ctx, t, p, 40)
	held := 0
	for _, ix := range s.Indexers {
		if !ix.Up || ix.Frozen {
			t.Errorf("indexer %+v: want up and not frozen", ix)
		}
		held += len(ix.Publishers)
	}
	if held != 2 {
		t.Errorf("%d assignments, want 2 (replication 1)", held)
	}
	// Kill an indexer and start it again on the same ports and data:
	// the front end answers in full again.
	if cfg.Store != "memory" {
		if err := p.Kill(localpool.IndexerName(0)); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx, localpool.IndexerName(0)); err != nil {
			t.Fatal(err)
		}
		if c, err := p.WaitComplete(ctx); err != nil || c.Multihashes != 40 {
			t.Fatalf("after a restart of indexer-0: %v, %v", c, err)
		}
		sameCounts(ctx, t, p, 40)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	closed = true
	if _, err := p.Snapshot(ctx); !errors.Is(err, localpool.ErrClosed) {
		t.Fatalf("Snapshot after Close: %v, want ErrClosed", err)
	}
	return p
}

// sameCounts waits until the view's snapshot and the front end's
// /status.json (the page) report the same exact multihash count for each
// indexer, summing to want (each caches its counts for up to a second or
// two), and fails with both if they do not within 15 s.
func sameCounts(ctx context.Context, t *testing.T, p *localpool.Pool, want uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var last string
	for {
		s, err := p.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := status(ctx, p.URLs().Find)
		if err != nil {
			t.Fatal(err)
		}
		page := map[string]web.Indexer{}
		for _, ix := range rep.Indexers {
			page[ix.URL] = ix
		}
		var sum uint64
		ok := rep.Entries != nil && *rep.Entries == want && rep.EntriesExact
		last = ""
		for i, ix := range s.Indexers {
			pg := page[p.URLs().Indexers[i].Find]
			ok = ok && ix.MultihashesExact && pg.Entries != nil && *pg.Entries == ix.Multihashes && pg.EntriesExact
			last += fmt.Sprintf("%s: view %d (exact %v), page %s (exact %v); ", ix.Name, ix.Multihashes, ix.MultihashesExact, count(pg.Entries), pg.EntriesExact)
			sum += ix.Multihashes
		}
		last += fmt.Sprintf("in all: view %d, page %s (exact %v)", sum, count(rep.Entries), rep.EntriesExact)
		if ok && sum == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("view and page disagree or differ from %d exact multihashes: %s", want, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func count(n *uint64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}

// status GETs the front end's /status.json.
func status(ctx context.Context, find string) (web.Report, error) {
	var rep web.Report
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, find+"/status.json", nil)
	if err != nil {
		return rep, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("/status.json: %w", err)
	}
	return rep, nil
}

func lines(ls []string) string {
	out := ""
	for _, l := range ls[max(0, len(ls)-30):] {
		out += l + "\n"
	}
	return out
}

// TestGoroutines runs a small pool in this process on the memory store
// (not restarted: a memory index restarts empty, while the walker
// positions persist).
func TestGoroutines(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	run(t, small(t, false, "memory"))
}

// TestProcesses runs a small pool with one process per role on Pebble,
// and restarts an indexer (SIGKILL, then the same ports and directory).
func TestProcesses(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	if _, err := os.Executable(); err != nil {
		t.Fatalf("processes mode re-executes this test binary: %v", err)
	}
	run(t, small(t, true, "pebble"))
}
