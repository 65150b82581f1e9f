package admin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/admin"
)

// statuses returns n publisher statuses in a shuffled order, and their
// publishers sorted by string form (the order of the pages).
func statuses(t *testing.T, n int) ([]admin.PublisherStatus, []peer.ID) {
	t.Helper()
	list := make([]admin.PublisherStatus, n)
	ids := make([]peer.ID, n)
	for i := range n {
		ids[i] = testID(t, byte(i))
		list[i] = admin.PublisherStatus{Publisher: ids[i], AdsWalked: uint64(i)}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { list[i], list[j] = list[j], list[i] })
	slices.SortFunc(ids, func(a, b peer.ID) int { return strings.Compare(a.String(), b.String()) })
	return list, ids
}

func publishers(list []admin.PublisherStatus) []peer.ID {
	out := make([]peer.ID, len(list))
	for i, ps := range list {
		out[i] = ps.Publisher
	}
	return out
}

// TestIngestStatusPages follows the handler's Link headers from the first
// page, as any HTTP client may: every publisher comes once, in order, in
// pages of the default size; the body of each page is the JSON array old
// clients decode.
func TestIngestStatusPages(t *testing.T) {
	const n = 250
	f := newFakeNode(testID(t, 255))
	f.ingest, _ = statuses(t, n)
	_, want := statuses(t, n)
	h := newHandler(t, f)

	var got []peer.ID
	var sizes []int
	target := "/ingest/status"
	for pages := 0; target != ""; pages++ {
		if pages > n {
			t.Fatal("pages do not end")
		}
		w := do(t, h, http.MethodGet, target, nil, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
		}
		var page []admin.PublisherStatus
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
			t.Fatalf("GET %s: body is not a JSON array of statuses: %v", target, err)
		}
		got = append(got, publishers(page)...)
		sizes = append(sizes, len(page))
		target = ""
		if link := w.Header().Get("Link"); link != "" {
			ref, ok := strings.CutSuffix(link, `>; rel="next"`)
			if !ok || !strings.HasPrefix(ref, "<") {
				t.Fatalf("Link %q", link)
			}
			base, _ := url.Parse("http://127.0.0.1:3002/ingest/status?limit=5")
			next, err := base.Parse(ref[1:])
			if err != nil {
				t.Fatal(err)
			}
			if next.Path != "/ingest/status" {
				t.Fatalf("Link %q resolves to %s", link, next)
			}
			target = next.RequestURI()
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged publishers (%d) are not every publisher once, sorted (%d)", len(got), len(want))
	}
	if !slices.Equal(sizes, []int{admin.DefaultIngestStatusLimit, admin.DefaultIngestStatusLimit, 50}) {
		t.Fatalf("page sizes %v", sizes)
	}
}

func TestIngestStatusQuery(t *testing.T) {
	const n = 30
	f := newFakeNode(testID(t, 255))
	f.ingest, _ = statuses(t, n)
	_, ids := statuses(t, n)
	h := newHandler(t, f)
	// A publisher the node does not know: the page starts after where
	// it would sort.
	absent := testID(t, 200)
	from := slices.IndexFunc(ids, func(id peer.ID) bool { return id.String() > absent.String() })
	if from < 0 {
		from = len(ids)
	}

	for _, c := range []struct {
		query string
		want  []peer.ID
		next  bool
	}{
		{"", ids, false},
		{"limit=30", ids, false},
		{"limit=29", ids[:29], true},
		{"limit=1000", ids, false},
		{"limit=7", ids[:7], true},
		{"limit=7&after=" + ids[6].String(), ids[7:14], true},
		{"after=" + ids[28].String(), ids[29:], false},
		{"after=" + ids[29].String(), nil, false},
		{"after=" + peer.ToCid(ids[9]).String(), ids[10:], false}, // CIDv1 form
		{"after=" + absent.String(), ids[from:], false},
	} {
		w := do(t, h, http.MethodGet, "/ingest/status?"+c.query, nil, nil)
		var page []admin.PublisherStatus
		if len(c.want) == 0 {
			if w.Code != http.StatusNoContent {
				t.Errorf("?%s: %d, want 204", c.query, w.Code)
			}
		} else if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &page) != nil || !slices.Equal(publishers(page), c.want) {
			t.Errorf("?%s: %d, %d entries, want %d", c.query, w.Code, len(page), len(c.want))
		}
		if link := w.Header().Get("Link"); (link != "") != c.next {
			t.Errorf("?%s: Link %q, want one: %v", c.query, link, c.next)
		} else if c.next && !strings.Contains(link, "after="+c.want[len(c.want)-1].String()) {
			t.Errorf("?%s: Link %q does not continue after the page's last publisher", c.query, link)
		}
	}

	for _, c := range []struct{ query, says string }{
		{"limit=0", "bad limit"}, {"limit=-3", "bad limit"}, {"limit=1001", "from 1 to 1000"},
		{"limit=ten", "bad limit"}, {"after=12D3nope", "bad after"}, {"after=" + strings.Repeat("x", 300), "bad after"},
	} {
		w := do(t, h, http.MethodGet, "/ingest/status?"+c.query, nil, nil)
		if w.Code != http.StatusBadRequest || w.Header().Get(admin.ErrorHeader) != "bad-request" || !strings.Contains(w.Body.String(), c.says) {
			t.Errorf("?%s: %d %q %q, want 400 saying %q", c.query, w.Code, w.Header().Get(admin.ErrorHeader), w.Body, c.says)
		}
		if len(w.Body.String()) > 300 {
			t.Errorf("?%s: the answer echoes the whole input: %d bytes", c.query, w.Body.Len())
		}
	}
}

// TestClientIngestStatusPages: the client pages through the handler; and
// takes a node that does not paginate as one page, and refuses a cursor
// that would loop.
func TestClientIngestStatusPages(t *testing.T) {
	ctx := t.Context()
	const n = 2*admin.MaxIngestStatusLimit + 3
	f := newFakeNode(testID(t, 255))
	f.ingest = make([]admin.PublisherStatus, n)
	want := make([]peer.ID, n)
	for i := range n {
		want[i] = seqID(t, i)
		f.ingest[n-1-i] = admin.PublisherStatus{Publisher: want[i]}
	}
	slices.SortFunc(want, func(a, b peer.ID) int { return strings.Compare(a.String(), b.String()) })
	_, cl := serve(t, f, nil)

	all, err := cl.IngestStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(publishers(all), want) {
		t.Fatalf("IngestStatus: %d publishers, want all %d sorted", len(all), n)
	}
	if calls := f.Calls(); len(calls) != 3 {
		t.Fatalf("IngestStatus made %d requests, want 3 pages of %d", len(calls), admin.MaxIngestStatusLimit)
	}

	page, next, err := cl.IngestStatusPage(ctx, "", 7)
	if err != nil || !slices.Equal(publishers(page), want[:7]) || next != want[6] {
		t.Fatalf("first page of 7: %d entries, next %s, %v", len(page), next, err)
	}
	page, next, err = cl.IngestStatusPage(ctx, want[n-2], 0)
	if err != nil || !slices.Equal(publishers(page), want[n-1:]) || next != "" {
		t.Fatalf("last page: %d entries, next %q, %v", len(page), next, err)
	}
	if _, _, err := cl.IngestStatusPage(ctx, "", admin.MaxIngestStatusLimit+1); err == nil {
		t.Fatal("limit over the maximum: no error")
	}

	// Nodes that do not paginate, or paginate wrongly.
	one := []admin.PublisherStatus{{Publisher: want[0]}, {Publisher: want[1]}}
	for _, c := range []struct {
		name string
		link string
		ok   bool
	}{
		{"no Link: one page", "", true},
		{"Link of another relation", `<?after=` + want[1].String() + `>; rel="prev"`, true},
		{"cursor before the page's end", `<?after=` + want[0].String() + `>; rel="next"`, false},
		{"cursor without after", `</ingest/status?limit=3>; rel="next"`, false},
		{"cursor not a peer ID", `<?after=nope>; rel="next"`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.link != "" {
					w.Header().Set("Link", c.link)
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(one) // whatever the query
			}))
			defer srv.Close()
			cl, err := admin.NewClient(srv.URL, admin.WithHTTPClient(srv.Client()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := cl.IngestStatus(ctx)
			if c.ok != (err == nil) {
				t.Fatalf("IngestStatus: %d entries, %v; want success: %v", len(got), err, c.ok)
			}
			if c.ok && len(got) != 2 {
				t.Fatalf("IngestStatus: %d entries, want the 2 of the one page", len(got))
			}
			if !c.ok && (errors.Is(err, admin.ErrNotSupported) || !strings.Contains(err.Error(), "decoding response")) {
				t.Fatalf("error %v, want a decoding error", err)
			}
		})
	}
}

// seqID is a distinct, deterministic Ed25519 peer ID per i (testID has
// 256).
func seqID(t *testing.T, i int) peer.ID {
	t.Helper()
	var seed [32]byte
	seed[0], seed[1], seed[2] = byte(i), byte(i>>8), 0x5e
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
