package fleetnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
)

// A node that stops (SIGTERM) hands its indexes to their next owners over
// HTTP, so that a drain costs no clone even without a shared snapshot
// directory:
//
//   - before its manager releases anything, the node writes one entry per
//     ready index to the handoffs side table: item → "commit node";
//   - its HTTP server stays up while the manager drains and after, and
//     answers GET /snapshot?item=…&commit=… with the index in the
//     snapshot format (codeindex.Encode);
//   - the node that wins the item at that commit (with rehydration on)
//     fetches it from the address the addrs table gives for the node,
//     checks it as it checks a snapshot file (CRC-64, every reference, the
//     build checksum, the commit), and deletes the entry; anything wrong
//     and it indexes from git;
//   - the stopping node waits until every entry it wrote is gone, for at
//     most -handoff-wait, and for at most two auction windows and a TTL
//     without a fetch (when the whole fleet stops, nobody fetches), then
//     deletes what is left and stops.
//
// An offered index is fetched before a shared snapshot directory is read:
// both are fast, and the fetch lets the stopping node go sooner.

// handoffWaitDefault bounds how long a stopping node waits for its
// indexes to be fetched.
const handoffWaitDefault = 10 * time.Second

// handoffValue is a handoffs entry: the commit, then the node.
func handoffValue(commit, node string) string { return commit + " " + node }

func parseHandoff(v string) (commit, node string) {
	commit, node, _ = strings.Cut(v, " ")
	return commit, node
}

// handing holds the indexes a stopping node offered, by item: the
// manager's drain drops them from the indexer, and GET /snapshot still
// serves them from here.
type handing struct {
	mu  sync.Mutex
	ixs map[string]*repoIndex
}

func (h *handing) get(item string) *repoIndex {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ixs[item]
}

// offerHandoffs writes a handoffs entry for every ready index the node
// holds and keeps the indexes in n.handing; it returns the items offered.
func (n *Node) offerHandoffs(ctx context.Context) []string {
	entries := map[string]string{}
	ixs := map[string]*repoIndex{}
	for _, ref := range n.mgr.Held() {
		ri := n.idx.get(ref.Item)
		if ri == nil || !codeindex.ValidCommit(ri.Commit) {
			continue
		}
		entries[ref.Item] = handoffValue(ri.Commit, n.cfg.Name)
		ixs[ref.Item] = ri
	}
	if len(entries) == 0 {
		return nil
	}
	n.handing.mu.Lock()
	n.handing.ixs = ixs
	n.handing.mu.Unlock()
	if err := n.tab.Handoffs.Set(ctx, entries); err != nil {
		n.log.Warn("handoff: offer", "items", len(entries), "err", err)
		return nil
	}
	items := make([]string, 0, len(entries))
	for item := range entries {
		items = append(items, item)
	}
	n.log.Info("handoff: offered", "items", len(items))
	return items
}

// awaitHandoffs waits until the entries of items that name this node are
// gone (fetched), for at most wait, and for at most idle without one
// being fetched (no node is left to take them, or their new owners
// loaded them from a shared snapshot directory), then deletes the rest.
func (n *Node) awaitHandoffs(items []string, wait, idle time.Duration) {
	if len(items) == 0 {
		return
	}
	start := time.Now()
	progress := start
	left := slices.Clone(items)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		all, err := n.tab.Handoffs.List(ctx)
		cancel()
		if err == nil {
			still := left[:0]
			for _, item := range left {
				if _, node := parseHandoff(all[item]); node == n.cfg.Name {
					still = append(still, item)
				}
			}
			if len(still) < len(left) {
				progress = time.Now()
			}
			left = still
		}
		now := time.Now()
		if len(left) == 0 || now.Sub(start) >= wait || now.Sub(progress) >= idle {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	n.log.Info("handoff: done", "offered", len(items), "fetched", len(items)-len(left), "left", len(left),
		"took", time.Since(start).Round(time.Millisecond))
	if len(left) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := n.tab.Handoffs.Delete(ctx, left...); err != nil {
			n.log.Warn("handoff: delete the entries left", "err", err)
		}
	}
}

// handleSnapshot is GET /snapshot?item=…&commit=…: the node's index of
// item at commit in the snapshot format, from the indexer or from what a
// stopping node offered; 404 when it has none.
func (n *Node) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	item, commit := r.URL.Query().Get("item"), r.URL.Query().Get("commit")
	if item == "" || !codeindex.ValidCommit(commit) {
		http.Error(w, "want item and commit (an object name)", http.StatusBadRequest)
		return
	}
	ri := n.idx.get(item)
	if ri == nil || ri.Commit != commit {
		ri = n.handing.get(item)
	}
	if ri == nil || ri.Commit != commit {
		http.Error(w, fmt.Sprintf("no index of %s at %s here", item, commit), http.StatusNotFound)
		return
	}
	b := codeindex.Encode(ri.Index, ri.Commit)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	_, _ = w.Write(b)
}

// fetchHandoff returns the index of item at commit from the node the
// handoffs table names, or an error wrapping fs.ErrNotExist when no node
// offers it. The entry is deleted once the index checks, or when the node
// does not have it.
func (n *Node) fetchHandoff(ctx context.Context, item, commit string) (*codeindex.Index, error) {
	v, err := n.tab.Handoffs.Get(ctx, item)
	if errors.Is(err, ErrNoEntry) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("handoff of %s: %w", item, err)
	}
	c, from := parseHandoff(v)
	if c != commit || from == n.cfg.Name {
		return nil, fmt.Errorf("handoff of %s: offered at %s by %s: %w", item, c, from, fs.ErrNotExist)
	}
	addr, err := n.tab.Addrs.Get(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("handoff of %s: address of %s: %w", item, from, err)
	}
	u := "http://" + addr + "/snapshot?" + url.Values{"item": {item}, "commit": {commit}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("handoff of %s from %s: %w", item, from, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		_ = n.tab.Handoffs.Delete(ctx, item)
		return nil, fmt.Errorf("handoff of %s: %s no longer has it: %w", item, from, fs.ErrNotExist)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("handoff of %s from %s: %s", item, from, resp.Status)
	}
	// An index is at most the node's budget; its snapshot a little more.
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(n.cfg.Budget)+1<<20))
	if err != nil {
		return nil, fmt.Errorf("handoff of %s from %s: %w", item, from, err)
	}
	ix, got, err := codeindex.Decode(b)
	if err == nil && got != commit {
		err = fmt.Errorf("%w: index of commit %s, want %s", codeindex.ErrCorrupt, got, commit)
	}
	if err != nil {
		return nil, fmt.Errorf("handoff of %s from %s: %w", item, from, err)
	}
	if err := n.tab.Handoffs.Delete(ctx, item); err != nil {
		n.log.Warn("handoff: delete the entry", "item", item, "err", err)
	}
	return ix, nil
}
