package fleetnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/lease"
)

// hopHeader marks a query one node routed to another: the receiver answers
// from its own state and never routes it again.
const hopHeader = "X-Fleet-Routed-By"

// routeTimeout bounds a routed query.
const routeTimeout = 10 * time.Second

// SearchResult is the answer of GET /search with status "ok".
type SearchResult struct {
	Status    string            `json:"status"` // "ok"
	Repo      string            `json:"repo"`
	Query     string            `json:"query"`
	Commit    string            `json:"commit"`
	ServedBy  string            `json:"served_by"`
	RoutedBy  string            `json:"routed_by,omitempty"`
	Matches   []codeindex.Match `json:"matches"`
	Truncated bool              `json:"truncated"`
}

// SearchRefusal is the answer of GET /search that is not "ok": warming
// (503, the owner has not finished indexing), unassigned (503, nobody
// holds the repo), unreachable (503, the owner did not answer), unknown
// (404) or bad query (400).
type SearchRefusal struct {
	Status string `json:"status"`
	Repo   string `json:"repo,omitempty"`
	Owner  string `json:"owner,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ItemStatus is one held item in GET /status.
type ItemStatus struct {
	Item   string `json:"item"`
	Fence  uint64 `json:"fence"`
	Ready  bool   `json:"ready"`
	Size   int64  `json:"size,omitempty"`
	Files  int    `json:"files,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// Status is the answer of GET /status.
type Status struct {
	Node   string       `json:"node"`
	Addr   string       `json:"addr"`
	Budget int64        `json:"budget"`
	Used   int64        `json:"used"`
	Items  []ItemStatus `json:"items"`
	// Starved are the unowned repos too large for this node's budget
	// (agent.Manager.Starved): it never bids on them.
	Starved []StarvedStatus `json:"starved"`
	// Rehydrate tells whether the node loads snapshots (it has a snapshot
	// directory and the setting is on).
	Rehydrate bool             `json:"rehydrate"`
	Counters  map[string]int64 `json:"counters"`
}

// StarvedStatus is one starved repo in GET /status.
type StarvedStatus struct {
	Item string `json:"item"`
	Need int64  `json:"need"` // bytes: the larger of the row's Size and MinBid
}

// ownRoutes are the patterns of the node's own API.
var ownRoutes = []string{"GET /search", "GET /status", "GET /snapshot"}

// Handler is the node's HTTP API, which Run serves on its listener:
//
//	GET /search?repo=ID&q=TEXT[&limit=N]   SearchResult, or SearchRefusal
//	GET /status                            Status
//	GET /snapshot?item=ID&commit=SHA       an index in the snapshot format (handoffs)
//
// and Config.Routes.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /search", n.handleSearch)
	mux.HandleFunc("GET /status", n.handleStatus)
	mux.HandleFunc("GET /snapshot", n.handleSnapshot)
	for pattern, h := range n.cfg.Routes {
		mux.Handle(pattern, h)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (n *Node) handleSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	repoID, query := q.Get("repo"), q.Get("q")
	limit := codeindex.DefaultLimit
	bad := func(msg string) {
		n.c.QueriesBad.Add(1)
		writeJSON(w, http.StatusBadRequest, SearchRefusal{Status: "bad query", Repo: repoID, Error: msg})
	}
	if repoID == "" {
		bad("missing parameter repo")
		return
	}
	if err := codeindex.CheckQuery(query); err != nil {
		bad(err.Error())
		return
	}
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > codeindex.MaxLimit {
			bad(fmt.Sprintf("limit %q: want 1 to %d", s, codeindex.MaxLimit))
			return
		}
		limit = v
	}
	if item, slot := lease.SplitReplicaID(repoID); item != repoID || slot != 0 {
		bad(fmt.Sprintf("repo %q names a replica slot; ask for the repo %q", repoID, item))
		return
	}
	rows, err := lease.Replicas(r.Context(), n.store, repoID, n.cfg.Replicas)
	if errors.Is(err, lease.ErrNotFound) {
		n.c.QueriesUnknown.Add(1)
		writeJSON(w, http.StatusNotFound, SearchRefusal{Status: "unknown", Repo: repoID, Error: "no such repo in the catalog"})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, SearchRefusal{Status: "catalog unavailable", Repo: repoID, Error: err.Error()})
		return
	}
	routedBy := r.Header.Get(hopHeader)
	// A copy this node holds and has indexed answers here.
	mine := false
	for _, row := range rows {
		if row.Owner != n.cfg.Name {
			continue
		}
		mine = true
		// The index may be of an older commit while the new one is built:
		// the answer names the commit it searched.
		if ri := n.idx.get(row.ID); ri != nil {
			_, served := n.mgr.Serve(r.Context(), row.ID) // a span with -trace-file
			n.c.QueriesLocal.Add(1)
			ms, trunc, err := ri.Search(query, limit)
			served(err)
			if err != nil { // checked above; kept for safety
				bad(err.Error())
				return
			}
			if ms == nil {
				ms = []codeindex.Match{}
			}
			writeJSON(w, http.StatusOK, SearchResult{Status: "ok", Repo: repoID, Query: query, Commit: ri.Commit,
				ServedBy: n.cfg.Name, RoutedBy: routedBy, Matches: ms, Truncated: trunc})
			return
		}
	}
	// Else the ready copies elsewhere, the primary first (lease.Serving's
	// order), tried in turn while their owners do not answer.
	var ready []lease.Row
	for _, row := range rows {
		if row.Owner != "" && row.Owner != n.cfg.Name && row.Ready {
			ready = append(ready, row)
		}
	}
	switch {
	case len(ready) > 0 && routedBy != "":
		// Routed here, but this node serves no copy: ownership moved;
		// the router may retry.
		writeJSON(w, http.StatusServiceUnavailable, SearchRefusal{Status: "moved", Repo: repoID, Owner: ready[0].Owner})
	case len(ready) > 0:
		n.route(r.Context(), w, ready, repoID, query, limit)
	case mine:
		n.c.QueriesWarming.Add(1)
		writeJSON(w, http.StatusServiceUnavailable, SearchRefusal{Status: "warming", Repo: repoID, Owner: n.cfg.Name})
	case anyOwner(rows) != "":
		n.c.QueriesWarming.Add(1)
		writeJSON(w, http.StatusServiceUnavailable, SearchRefusal{Status: "warming", Repo: repoID, Owner: anyOwner(rows)})
	default:
		n.c.QueriesUnassigned.Add(1)
		writeJSON(w, http.StatusServiceUnavailable, SearchRefusal{Status: "unassigned", Repo: repoID})
	}
}

// anyOwner returns the first owner among rows, or "".
func anyOwner(rows []lease.Row) string {
	for _, r := range rows {
		if r.Owner != "" {
			return r.Owner
		}
	}
	return ""
}

// route sends the query to the owner of the first copy in ready that
// answers, and relays its answer.
func (n *Node) route(ctx context.Context, w http.ResponseWriter, ready []lease.Row, repoID, query string, limit int) {
	var errs []error
	for _, row := range ready {
		code, body, err := n.forward(ctx, row.Owner, repoID, query, limit)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.c.QueriesRouted.Add(1)
		n.log.Debug("routed", "item", repoID, "owner", row.Owner, "slot", row.ID, "code", code)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(body)
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, SearchRefusal{Status: "unreachable", Repo: repoID, Owner: ready[0].Owner,
		Error: errors.Join(errs...).Error()})
}

// forward sends the query to owner, found in the fleet's address table,
// and returns its answer.
func (n *Node) forward(ctx context.Context, owner, repoID, query string, limit int) (int, []byte, error) {
	addr, err := n.tab.Addrs.Get(ctx, owner)
	if errors.Is(err, ErrNoEntry) {
		return 0, nil, fmt.Errorf("owner %s has published no address", owner)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("look up the address of %s: %w", owner, err)
	}
	ctx, cancel := context.WithTimeout(ctx, routeTimeout)
	defer cancel()
	u := "http://" + addr + "/search?" + url.Values{"repo": {repoID}, "q": {query}, "limit": {strconv.Itoa(limit)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(hopHeader, n.cfg.Name)
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("route to %s at %s: %w", owner, addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("route to %s at %s: read the answer: %w", owner, addr, err)
	}
	return resp.StatusCode, body, nil
}

// Status is what GET /status answers: the node's budget and use, the
// items it holds, the starved ones, and its counters.
func (n *Node) Status() Status {
	st := Status{Node: n.cfg.Name, Addr: n.addr, Budget: n.cfg.Budget, Used: n.mgr.Used(),
		Items: []ItemStatus{}, Starved: []StarvedStatus{}, Counters: n.c.snapshot(),
		Rehydrate: n.idx.snaps != nil && n.idx.rehydrate.Load()}
	for _, it := range n.mgr.Starved() {
		st.Starved = append(st.Starved, StarvedStatus{Item: it.Item, Need: it.Need})
	}
	for _, ref := range n.mgr.Held() {
		is := ItemStatus{Item: ref.Item, Fence: uint64(ref.Fence)}
		if ri := n.idx.get(ref.Item); ri != nil {
			is.Ready, is.Size, is.Files, is.Commit = true, ri.Size(), ri.Files(), ri.Commit
		}
		st.Items = append(st.Items, is)
	}
	sort.Slice(st.Items, func(i, j int) bool { return st.Items[i].Item < st.Items[j].Item })
	return st
}

func (n *Node) handleStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.Status())
}
