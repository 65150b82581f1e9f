package handoff_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/store/memory"
)

// The FrozenURL is the admin caller's choice: by default the receiver
// does not GET one on loopback, and it never follows a redirect.
func TestHandoffDialPolicy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	st := memory.New()
	defer st.Close()
	reg, err := handoff.NewRegistry(newMapDS())
	if err != nil {
		t.Fatal(err)
	}
	strict, err := handoff.NewReceiver(st, &fakeIngest{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	req := handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}
	err = strict.Handoff(ctx, f.pub, req)
	if !errors.Is(err, handoff.ErrFrozenIndexer) || !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		t.Fatalf("Handoff from a loopback FrozenURL with the default policy: %v, want ErrFrozenIndexer and ErrForbiddenAddress", err)
	}
	if n := node.requests.Load(); n != 0 {
		t.Fatalf("the frozen indexer was asked %d times", n)
	}
	checkAssignments(t, reg, nil)

	// A FrozenURL that redirects to a real frozen indexer.
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, node.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	follower := &http.Client{} // follows redirects
	defer follower.CloseIdleConnections()
	for name, opts := range map[string][]handoff.Option{
		"default client": {handoff.WithDialPolicy(privatePool)},
		"WithHTTPClient": {handoff.WithHTTPClient(follower)},
	} {
		reg, err := handoff.NewRegistry(newMapDS())
		if err != nil {
			t.Fatal(err)
		}
		r, err := handoff.NewReceiver(st, &fakeIngest{}, reg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		err = r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: redirector.URL})
		if !errors.Is(err, handoff.ErrFrozenIndexer) || !errors.Is(err, netpolicy.ErrRedirect) {
			t.Fatalf("%s: Handoff through a redirect: %v, want ErrFrozenIndexer and ErrRedirect", name, err)
		}
		checkAssignments(t, reg, nil)
	}
	if n := node.requests.Load(); n != 0 {
		t.Fatalf("the redirect target was asked %d times", n)
	}
	if follower.CheckRedirect != nil {
		t.Fatal("the caller's client was modified")
	}

	if _, err := handoff.NewReceiver(st, &fakeIngest{}, reg, handoff.WithDialPolicy(privatePool), handoff.WithHTTPClient(follower)); !errors.Is(err, handoff.ErrInvalidOption) {
		t.Fatalf("WithDialPolicy with WithHTTPClient: %v, want ErrInvalidOption (the policy would be ignored)", err)
	}
}

// What the frozen indexer writes in an error answer reaches no error: the
// admin API answers the caller with the error's text. It is logged at
// DEBUG only.
func TestHandoffErrorBodyNotEchoed(t *testing.T) {
	const marker = "MARKER-91b2-frozen-indexer-text"
	ctx := context.Background()
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	node.set(http.StatusInternalServerError, []byte(marker+" "+strings.Repeat("x", 600)))
	st := memory.New()
	defer st.Close()
	var logs logBuffer
	debug := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := newReceiver(t, st, &fakeIngest{}, newMapDS(), handoff.WithLogger(debug))
	err := r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL})
	if !errors.Is(err, handoff.ErrFrozenIndexer) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("Handoff: %v, want ErrFrozenIndexer naming the status", err)
	}
	if strings.Contains(err.Error(), "MARKER") {
		t.Fatalf("the error quotes the frozen indexer's body: %v", err)
	}
	if !strings.Contains(logs.String(), marker) {
		t.Fatalf("the body is not in the debug log:\n%s", logs.String())
	}
}
