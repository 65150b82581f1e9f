package fleetnode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// Search sends GET /search to the node at addr (host:port) and decodes
// the answer: the result when the status is 200, else the refusal. Any
// node answers for any repo of the catalog: it routes the query to the
// owner. The request is bounded to 10 s.
func Search(ctx context.Context, hc *http.Client, addr, repoID, q string, limit int) (int, *SearchResult, *SearchRefusal, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := "http://" + addr + "/search?" + url.Values{"repo": {repoID}, "q": {q}, "limit": {strconv.Itoa(limit)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		var res SearchResult
		return resp.StatusCode, &res, nil, json.NewDecoder(resp.Body).Decode(&res)
	}
	var ref SearchRefusal
	return resp.StatusCode, nil, &ref, json.NewDecoder(resp.Body).Decode(&ref)
}

// CatalogEntry is one repo of a fleet's catalog: its lease row and the
// URL nodes clone it from.
type CatalogEntry struct {
	lease.Item
	URL string
}

// PutCatalog adds entries to the fleet's catalog: their clone URLs to
// tab.Repos first (in one write, so that a node that wins a row finds
// its URL), then a row for each in s with replicas-1 replica slots
// (lease.PutReplicated). A row already there gets the entry's commit,
// size and minimum bid; its holder indexes the new commit under the same
// lease.
func PutCatalog(ctx context.Context, tab Tables, s lease.Store, entries []CatalogEntry, replicas int) error {
	urls := make(map[string]string, len(entries))
	for _, e := range entries {
		urls[e.ID] = e.URL
	}
	if err := tab.Repos.Set(ctx, urls); err != nil {
		return fmt.Errorf("put clone URLs: %w", err)
	}
	for _, e := range entries {
		if err := lease.PutReplicated(ctx, s, e.Item, replicas); err != nil {
			return fmt.Errorf("put catalog row %s: %w", e.ID, err)
		}
	}
	return nil
}
