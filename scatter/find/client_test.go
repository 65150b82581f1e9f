package find_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/scatter/find"
)

// TestClientRoundTrip serves a store through the handler and reads it
// back through a Client, as NDJSON and as JSON: every result and
// provider record must come back as the store backend gives them.
func TestClientRoundTrip(t *testing.T) {
	fx := newFindExtendedFixture(t)
	ctx := context.Background()
	full := findFullProvider(t)
	full.AddrInfo = *findAddrInfo(t, 30)
	if err := fx.s.PutProvider(ctx, full); err != nil {
		t.Fatal(err)
	}
	local := newStoreBackend(t, fx.s)
	h := newHandler(t, local)
	// jsonOnly hides NDJSON support, as an old or different server would.
	jsonOnly := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Accept", "application/json")
		h.ServeHTTP(w, r)
	})
	for name, handler := range map[string]http.Handler{"ndjson": h, "json": jsonOnly} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			client := find.NewHTTPClient()
			defer client.CloseIdleConnections()
			b, err := find.NewClient(srv.URL+"/", find.WithHTTPClient(client))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := findCollect(t, b, fx.mh), findCollect(t, local, fx.mh); !slices.Equal(got, want) {
				t.Errorf("Find:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if got := findCollect(t, b, findMH(t, 77)); len(got) != 0 {
				t.Errorf("Find of an unknown multihash: %v", got)
			}
			// Stopping early closes the stream without error or leak.
			for range b.Find(ctx, fx.mh) {
				break
			}
			gotP, err := b.Providers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantP, _ := local.Providers(ctx)
			sortInfos := func(s []find.ProviderInfo) {
				slices.SortFunc(s, func(a, b find.ProviderInfo) int {
					return strings.Compare(string(a.AddrInfo.ID), string(b.AddrInfo.ID))
				})
			}
			sortInfos(gotP)
			sortInfos(wantP)
			gj, _ := json.Marshal(gotP)
			wj, _ := json.Marshal(wantP)
			if string(gj) != string(wj) {
				t.Errorf("Providers:\n%s\nwant\n%s", gj, wj)
			}
			one, err := b.Provider(ctx, full.AddrInfo.ID)
			if err != nil {
				t.Fatal(err)
			}
			oj, _ := json.Marshal(one)
			want := find.ProviderInfoFromStore(&full)
			wj, _ = json.Marshal(want)
			if string(oj) != string(wj) {
				t.Errorf("Provider:\n%s\nwant\n%s", oj, wj)
			}
			if _, err := b.Provider(ctx, findPeer(t, 88)); !errors.Is(err, find.ErrNotFound) {
				t.Errorf("unknown provider: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestClientErrors checks that failures are errors naming the URL and
// status, and that an ended context shows through errors.Is.
func TestClientErrors(t *testing.T) {
	mh := findMH(t, 1)
	partial := &findFake{errs: map[string]error{string(mh): &find.PartialError{Answered: 0, Total: 2, TimedOut: 2}}}
	srv := httptest.NewServer(newHandler(t, partial))
	defer srv.Close()
	client := find.NewHTTPClient()
	defer client.CloseIdleConnections()
	b, err := find.NewClient(srv.URL, find.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	for _, err := range b.Find(context.Background(), mh) {
		ferr = err
	}
	if ferr == nil || !strings.Contains(ferr.Error(), srv.URL+"/multihash/") || !strings.Contains(ferr.Error(), "504") {
		t.Errorf("error %v, want one naming the URL and 504", ferr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range b.Find(ctx, mh) {
		ferr = err
	}
	if !errors.Is(ferr, context.Canceled) {
		t.Errorf("canceled: %v, want context.Canceled", ferr)
	}
	for _, u := range []string{"ftp://x", "http://", "::"} {
		if _, err := find.NewClient(u); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
}

// findSleepy is findFake, each Find taking pause first.
type findSleepy struct {
	findFake
	pause time.Duration
}

func (f *findSleepy) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	time.Sleep(f.pause)
	return f.findFake.Find(ctx, mh)
}

// TestClientWithinPerSourceCap checks that NewHTTPClient's client
// keeps to the per-source connection cap of the servers indexkit's roles
// run (64, internal/netlimit): 200 finds at once to one backend all
// succeed, queueing in the client, instead of losing connections the
// server closes at once.
func TestClientWithinPerSourceCap(t *testing.T) {
	mh := findMH(t, 1)
	r1 := find.ProviderResult{ContextID: []byte("c"), Provider: findAddrInfo(t, 1)}
	f := &findSleepy{findFake: findFake{results: map[string][]find.ProviderResult{string(mh): {r1}}}, pause: 20 * time.Millisecond}
	srv := httptest.NewUnstartedServer(newHandler(t, f))
	ln, err := netlimit.NewListener(srv.Listener, netlimit.WithMaxConnsPerIP(netlimit.DefaultMaxConnsPerIP))
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	client := find.NewHTTPClient()
	defer client.CloseIdleConnections()
	b, err := find.NewClient(srv.URL, find.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	const finds = 200
	errs := make(chan error, finds)
	var wg sync.WaitGroup
	for range finds {
		wg.Go(func() {
			n := 0
			for _, err := range b.Find(t.Context(), mh) {
				if err != nil {
					errs <- err
					return
				}
				n++
			}
			if n != 1 {
				errs <- fmt.Errorf("%d results, want 1", n)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("find: %v", err)
	}
	if s := ln.Stats(); s.Rejected != 0 {
		t.Errorf("listener stats %+v: the client went over the per-source cap", s)
	}
}

// TestClientQuotesAnswers: an answer that is not what the client expects
// (a proxy's HTML error page, with 200 or 502) is quoted in the error by
// its start, on one bounded line, not by the one character encoding/json
// shows; ProviderRecords, which a handoff's caller reads, quotes nothing.
func TestClientQuotesAnswers(t *testing.T) {
	const title = "<title>502 Bad Gateway</title>"
	page := "<html>\r\n<head>" + title + "</head>\n<body>\n" + strings.Repeat("<p>nginx</p>\n", 200) + "</body></html>\n"
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	client := find.NewHTTPClient()
	defer client.CloseIdleConnections()
	b, err := find.NewClient(srv.URL, find.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mh := findMH(t, 1)
	check := func(what string, err error) {
		t.Helper()
		msg := fmt.Sprint(err)
		if !strings.Contains(msg, title) || strings.ContainsAny(msg, "\r\n") || len(msg) > 500 {
			t.Errorf("%s: error %q, want the start of the answer (%s) on one bounded line", what, msg, title)
		}
	}
	for _, s := range []int{http.StatusOK, http.StatusBadGateway} {
		status = s
		var ferr error
		for _, err := range b.Find(ctx, mh) {
			ferr = err
		}
		check(fmt.Sprintf("Find, %d", s), ferr)
		_, perr := b.Providers(ctx)
		check(fmt.Sprintf("Providers, %d", s), perr)
		res := b.FindBatch(ctx, []multihash.Multihash{mh})
		check(fmt.Sprintf("FindBatch, %d", s), res[0].Err)
	}

	// A /providers answer read as a stream: its error says what is wrong
	// and quotes nothing, not even the token it found (a string as long as
	// the answer).
	for _, body := range []string{page, `"` + strings.Repeat("secret ", 1000) + `"`, `[{"a":1}, <html>]`} {
		var rerr error
		for _, err := range find.ProviderRecords(strings.NewReader(body)) {
			rerr = err
		}
		if msg := fmt.Sprint(rerr); rerr == nil || strings.Contains(msg, "<") || strings.Contains(msg, "secret") || len(msg) > 200 {
			t.Errorf("ProviderRecords(%.30q): error %q, want one that quotes nothing of the answer", body, msg)
		}
	}
}
