package localpool_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
)

// TestAdminToken: a pool makes a random admin token, in a file only its
// user can read; every indexer requires it, the assigner (which assigns
// the publishers) and the pool's own snapshot use it, and no role logs
// it. The handoff-from file lists every indexer's find URL, one added
// later too.
func TestAdminToken(t *testing.T) {
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 1, Indexers: 2, Store: "memory",
		Interval: 100 * time.Millisecond, Entries: 3, MaxAds: 2, PollInterval: 200 * time.Millisecond,
		Log: testLog{t}, LogLevel: 4,
	}
	ctx, p := startFaultPool(t, cfg)
	tok := p.AdminToken()
	if len(tok) != 64 {
		t.Fatalf("token of %d characters, want 64 hex digits", len(tok))
	}
	file := filepath.Join(cfg.Dir, localpool.AdminTokenFile)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", file, fi.Mode().Perm())
	}
	if data, _ := os.ReadFile(file); string(data) != tok+"\n" {
		t.Errorf("%s does not hold the token", file)
	}

	for _, ix := range p.URLs().Indexers {
		for auth, want := range map[string]int{"": 401, "Bearer " + tok[:63]: 401, "Bearer " + tok: 200} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ix.Admin+"/status", nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s GET /status with %q: %d, want %d", ix.Name, auth, resp.StatusCode, want)
			}
		}
	}
	// The assigner reached the admin APIs: the publisher is assigned; the
	// snapshot read them: every indexer up.
	waitFor(t, ctx, p, "the publisher assigned, every indexer up", func(s *localpool.Snapshot) bool {
		up := true
		for _, ix := range s.Indexers {
			up = up && ix.Up
		}
		return up && len(s.Publishers) == 1 && len(s.Publishers[0].Owners) == 1
	})

	readList := func() []string {
		data, err := os.ReadFile(filepath.Join(cfg.Dir, localpool.HandoffFromFile))
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		for l := range strings.SplitSeq(string(data), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				urls = append(urls, l)
			}
		}
		return urls
	}
	finds := func() []string {
		var out []string
		for _, ix := range p.URLs().Indexers {
			out = append(out, ix.Find)
		}
		return out
	}
	if got := readList(); !slices.Equal(got, finds()) {
		t.Errorf("%s lists %v, want %v", localpool.HandoffFromFile, got, finds())
	}
	if _, err := p.AddIndexer(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := readList(), finds(); len(want) != 3 || !slices.Equal(got, want) {
		t.Errorf("after AddIndexer, %s lists %v, want %v", localpool.HandoffFromFile, got, want)
	}

	for _, r := range p.Roles() {
		for _, l := range p.LogLines(r) {
			if strings.Contains(l, tok) {
				t.Fatalf("%s logs the token: %s", r, l)
			}
		}
	}
}
