package publishernode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/announce"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 60 * time.Second

// running is a Node's Run in a goroutine.
type running struct {
	node   *Node
	cancel context.CancelFunc
	done   chan error
}

// start builds a node of cfg on listeners of 127.0.0.1 and runs it.
func start(t *testing.T, cfg Config) *running {
	t.Helper()
	var lns Listeners
	for range cfg.Publishers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns.Publishers = append(lns.Publishers, ln)
	}
	node, err := New(t.Context(), cfg, lns)
	if err != nil {
		for _, ln := range lns.Publishers {
			ln.Close()
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{node: node, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- node.Run(ctx) }()
	t.Cleanup(func() {
		r.stop(t)
		if err := node.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func (r *running) url(i int) string { return r.node.Addrs().PublisherURL(i) }

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

// TestRunAnnouncesAndResumes runs a node of two publishers that announce
// to a receiver feeding an Ingester: once both have reached MaxAds and
// the ingester has walked to their heads, the store holds exactly the
// union of their truths. A restart on the same Dir serves the same
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
	cfg := DefaultConfig()
	cfg.Publishers, cfg.Seed, cfg.Interval, cfg.InitialAds, cfg.MaxAds = 2, 42, 30*time.Millisecond, 2, 6
	cfg.Entries, cfg.ChunkSize, cfg.RemoveEvery, cfg.UpdateEvery = 12, 5, 3, 4
	cfg.Announce, cfg.Dir = []string{rsrv.URL}, dir
	r := start(t, cfg)
	urls := []string{r.url(0), r.url(1)}
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
	cfg.MaxAds = 8
	r2 := start(t, cfg)
	for i := range 2 {
		u := r2.url(i)
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
	if got := truthOf(t, r2.url(1), false); got.Head != ref.Head().String() || got.Digest != ref.Truth(false).Digest {
		t.Fatalf("after restart publisher 1 serves head %s, a fresh one with 8 ads has %s", got.Head, ref.Head())
	}
}

// A state file in Dir written with another configuration is ErrState,
// naming what it was written with: a restart must regenerate the same
// chains. The file is left as it was.
func TestNewStateMismatch(t *testing.T) {
	dir := t.TempDir()
	if err := saveState(dir, state{Seed: 1, Entries: 100, ChunkSize: 100, RemoveEvery: 10, UpdateEvery: 7, Ads: []int{3}}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		edit func(*Config)
		text string
	}{
		{func(c *Config) { c.Seed = 2 }, "seed 1"},
		{func(c *Config) { c.PieceContextEvery = 3 }, "piece-context-every 0"},
	} {
		cfg := DefaultConfig()
		cfg.Dir = dir
		tc.edit(&cfg)
		_, err := New(t.Context(), cfg, Listeners{Publishers: []net.Listener{ln}})
		if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("New: %v, want ErrState naming %q", err, tc.text)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err != nil {
		t.Fatal(err)
	}
}
