package publishernode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/ingest/announce"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 60 * time.Second

// running is a Run in a goroutine.
type running struct {
	tap    *logtap.Tap
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{tap: logtap.New(nil), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- Main(ctx, args, r.tap)
		r.tap.Close()
	}()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("log:\n%s", strings.Join(r.tap.Lines(), "\n"))
		}
	})
	wctx, wcancel := context.WithTimeout(t.Context(), waitTimeout)
	defer wcancel()
	if _, err := r.tap.WaitMsg(wctx, "starting"); err != nil {
		t.Fatalf("publisher did not start: %v\n%s", err, strings.Join(r.tap.Lines(), "\n"))
	}
	return r
}

func (r *running) url(t *testing.T, i int) string {
	t.Helper()
	addr, err := r.tap.Addr(t.Context(), "publisher-"+strconv.Itoa(i))
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// stop cancels the Run and checks it returned nil; it is idempotent.
func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(waitTimeout):
		t.Errorf("Run did not return within %v of its cancel", waitTimeout)
	}
}

func truthOf(t *testing.T, url string, entries bool) Truth {
	t.Helper()
	var tr Truth
	q := ""
	if entries {
		q = "?entries=1"
	}
	getJSON(t, url+"/truth"+q, &tr)
	return tr
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunAnnouncesAndResumes runs two publishers in process that announce
// to a receiver feeding an Ingester: once both have reached -max-ads and
// the ingester has walked to their heads, the store holds exactly the
// union of their truths. A restart on the same -dir serves the same
// heads, and goes on with the same chains.
func TestRunAnnouncesAndResumes(t *testing.T) {
	ing, st := newIngester(t)
	recv, err := announce.NewReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	rsrv := httptest.NewServer(recv)
	defer rsrv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ingDone := make(chan error, 1)
	go func() { ingDone <- ing.Run(ctx) }()
	feedDone := make(chan struct{})
	go func() {
		defer close(feedDone)
		for {
			a, err := recv.Next(ctx)
			if err != nil {
				return
			}
			_ = ing.Announce(a.Publisher, a.Addrs, a.Cid)
		}
	}()
	defer func() {
		cancel()
		<-feedDone
		if err := <-ingDone; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("ingester: %v", err)
		}
	}()

	dir := t.TempDir()
	args := []string{"-listen", "127.0.0.1:0", "-publishers", "2", "-seed", "42", "-interval", "30ms",
		"-initial-ads", "2", "-max-ads", "6", "-entries", "12", "-chunk-size", "5", "-remove-every", "3",
		"-update-every", "4", "-announce", rsrv.URL, "-dir", dir, "-log-level", "debug"}
	r := start(t, args...)
	urls := []string{r.url(t, 0), r.url(t, 1)}
	var truths [2]Truth
	waitFor(t, "both publishers at 6 ads, ingested", func() bool {
		for i, u := range urls {
			truths[i] = truthOf(t, u, true)
			if truths[i].Ads != 6 {
				return false
			}
			st, ok := ing.Status(peerID(t, truths[i].Publisher))
			if !ok || !st.LastHead.Defined() || st.LastHead.String() != truths[i].Head {
				return false
			}
		}
		return true
	})
	if truths[0].Publisher == truths[1].Publisher {
		t.Fatal("two publishers share an identity")
	}
	want := Digest(append(append([]Entry(nil), truths[0].Entries...), truths[1].Entries...))
	if got := Digest(storeEntries(t, st)); got != want {
		t.Fatalf("store digest %s, truths' %s (%d + %d multihashes; store %d)", got, want,
			truths[0].Multihashes, truths[1].Multihashes, len(storeEntries(t, st)))
	}
	r.stop(t)

	// The restart continues the same chains from where they were.
	r2 := start(t, append(args[:len(args)-2:len(args)-2], "-max-ads", "8")...)
	for i := range 2 {
		u := r2.url(t, i)
		tr := truthOf(t, u, false)
		if tr.Publisher != truths[i].Publisher || tr.Ads < 6 {
			t.Fatalf("after restart publisher %d is %s at %d ads; was %s at 6", i, tr.Publisher, tr.Ads, truths[i].Publisher)
		}
		waitFor(t, fmt.Sprintf("publisher %d at 8 ads", i), func() bool { return truthOf(t, u, false).Ads == 8 })
	}
	ref, err := NewPublisher(Spec{Seed: PublisherSeed(42, 1), Ads: 8, Entries: 12, ChunkSize: 5, RemoveEvery: 3, UpdateEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := truthOf(t, r2.url(t, 1), false); got.Head != ref.Head().String() || got.Digest != ref.Truth(false).Digest {
		t.Fatalf("after restart publisher 1 serves head %s, a fresh one with 8 ads has %s", got.Head, ref.Head())
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	if err := saveState(dir, state{Seed: 1, Entries: 100, ChunkSize: 100, RemoveEvery: 10, UpdateEvery: 7, Ads: []int{3}}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, tc := range []struct {
		args []string
		want error
		text string
	}{
		{[]string{"-h"}, flag.ErrHelp, ""},
		{[]string{"-listen", busy}, nil, "-listen: publisher-0: listen tcp " + busy + ": bind: address already in use"},
		{[]string{"-max-conns-per-ip", "-1"}, nil, "-max-conns-per-ip -1 must not be negative"},
		{[]string{"-fault", "lies"}, nil, "unknown fault \"lies\""}, // the flag package does not wrap
		{[]string{"-publishers", "0"}, nil, "-publishers 0"},
		{[]string{"-listen", "127.0.0.1"}, nil, "-listen"},
		{[]string{"-listen", "127.0.0.1:0", "-dir", dir, "-seed", "2"}, ErrState, "seed 1"},
		{[]string{"-listen", "127.0.0.1:0", "-dir", dir, "-piece-context-every", "3"}, ErrState, "piece-context-every 0"},
		{[]string{"-piece-context-every", "-1"}, nil, "-piece-context-every -1"},
	} {
		err := Main(t.Context(), tc.args, io.Discard)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("Main %q: %v, want %v containing %q", tc.args, err, tc.want, tc.text)
		}
	}
	if _, err := os.Stat(dir + "/" + StateFile); err != nil {
		t.Fatal(err)
	}
}
