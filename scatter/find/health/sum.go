package health

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Sum asks each of the find APIs at urls for its /stats, all at once and
// each within timeout, and returns the sums over those that answered, with
// Backends and BackendsAnswered set. It is one round of requests, for a
// front end's [Config].Stats (the Handler reuses an answer for
// [StatsMaxAge], so a front end fans out at most once a second for /stats).
// The sums are upper bounds: a multihash or provider held by two backends
// (a frozen indexer and the one that took over its publisher) counts
// twice. A backend that fails is left out, never an error. EntriesExact
// is true when at least one backend answered and every one that did
// counted exactly.
func Sum(ctx context.Context, client *http.Client, urls []string, timeout time.Duration) Stats {
	var (
		mu       sync.Mutex
		sum      Stats
		answered int
		inexact  bool
		wg       sync.WaitGroup
	)
	for _, u := range urls {
		wg.Go(func() {
			st, err := fetch(ctx, client, strings.TrimSuffix(u, "/")+"/stats", timeout)
			if err != nil {
				return
			}
			mu.Lock()
			sum.EntriesEstimate += st.EntriesEstimate
			sum.EntriesCount += st.EntriesCount
			sum.Providers += st.Providers
			inexact = inexact || !st.EntriesExact
			answered++
			mu.Unlock()
		})
	}
	wg.Wait()
	n := len(urls)
	sum.EntriesExact = answered > 0 && !inexact
	sum.Backends, sum.BackendsAnswered = &n, &answered
	return sum
}

func fetch(ctx context.Context, client *http.Client, u string, timeout time.Duration) (Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var st Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s: %s", u, resp.Status)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&st)
	return st, err
}
