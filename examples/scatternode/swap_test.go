package scatternode

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// genHandler answers with its generation number, and counts the requests
// it is serving so the test can catch one served after its drain.
type genHandler struct {
	gen      int
	inFlight atomic.Int64
	drained  atomic.Bool
	bad      atomic.Int64 // requests started after drained was reported
}

func (h *genHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	if h.drained.Load() {
		h.bad.Add(1)
	}
	fmt.Fprint(w, h.gen)
}

// Requests hammer a real server while handlers are swapped in a loop:
// every request is answered by one complete generation, generations seen
// by one client never go back, and a handler reported drained has no
// request in flight and gets none after.
func TestSwapHandlerConcurrent(t *testing.T) {
	const gens = 200
	hs := make([]*genHandler, gens)
	for i := range hs {
		hs[i] = &genHandler{gen: i}
	}
	sw := newSwapHandler(hs[0])
	srv := httptest.NewServer(sw)
	defer srv.Close()
	client := srv.Client()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var served atomic.Int64
	errs := make(chan error, 16)
	for range 8 {
		wg.Go(func() {
			last := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get(srv.URL)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				g, err := strconv.Atoi(string(body))
				if err != nil || g < last || g >= gens {
					errs <- fmt.Errorf("answer %q after generation %d", body, last)
					return
				}
				last = g
				served.Add(1)
			}
		})
	}

	var drainWG sync.WaitGroup
	for i := 1; i < gens; i++ {
		old := hs[i-1]
		drained := sw.Swap(hs[i])
		drainWG.Go(func() {
			select {
			case <-drained:
				if n := old.inFlight.Load(); n != 0 {
					errs <- fmt.Errorf("generation %d reported drained with %d requests in flight", old.gen, n)
				}
				old.drained.Store(true)
			case <-time.After(10 * time.Second):
				errs <- fmt.Errorf("generation %d never drained", old.gen)
			}
		})
		time.Sleep(200 * time.Microsecond)
	}
	drainWG.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, h := range hs {
		if n := h.bad.Load(); n > 0 {
			t.Errorf("generation %d served %d requests after it was reported drained", h.gen, n)
		}
	}
	if served.Load() == 0 {
		t.Error("no request was served")
	}
	t.Logf("%d requests over %d swaps", served.Load(), gens-1)
}

// A request in flight finishes on the handler it started on; requests that
// arrive after the swap go to the new one; drained is closed only when the
// old request is done.
func TestSwapHandlerInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		fmt.Fprint(w, "old")
	})
	sw := newSwapHandler(old)
	srv := httptest.NewServer(sw)
	defer srv.Close()

	got := make(chan string, 1)
	go func() {
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first request never reached the old handler")
	}

	drained := sw.Swap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "new") }))
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "new" {
		t.Errorf("request after the swap answered %q, want new", b)
	}
	select {
	case <-drained:
		t.Fatal("drained before the old request finished")
	default:
	}

	close(release)
	select {
	case s := <-got:
		if s != "old" {
			t.Errorf("request in flight answered %q, want old", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the old request never finished")
	}
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("not drained after the old request finished")
	}

	// A handler with nothing in flight is drained at once.
	select {
	case <-sw.Swap(http.NotFoundHandler()):
	case <-time.After(5 * time.Second):
		t.Fatal("an idle handler was not drained at once")
	}
}
