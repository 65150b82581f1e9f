package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest/admin"
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

// What the frozen indexer writes reaches no error, whatever its status
// (the admin API answers the caller with the error's text), not even the
// one character or the token encoding/json would quote; its start is
// logged at DEBUG only, on one line. Every such failure is an upstream
// one: admin.ErrUpstream, which the admin API answers 502.
func TestHandoffErrorBodyNotEchoed(t *testing.T) {
	const marker = "MARKER-91b2-frozen-indexer-text"
	ctx := context.Background()
	f := newFixture(t)
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"500", http.StatusInternalServerError, marker + " " + strings.Repeat("x", 600), handoff.ErrFrozenIndexer},
		{"HTML page", http.StatusOK, "M<html>\n<title>" + marker + "</title>\n" + strings.Repeat("<p>x</p>\n", 100), handoff.ErrInvalidProviders},
		{"a string", http.StatusOK, `"` + marker + strings.Repeat(" x", 300) + `"`, handoff.ErrInvalidProviders},
		{"a bad record", http.StatusOK, `[{"Publisher":{"ID":M` + marker + `}}]`, handoff.ErrInvalidProviders},
	} {
		t.Run(c.name, func(t *testing.T) {
			node := newFrozenNode(t, f.recs...)
			node.set(c.status, []byte(c.body))
			st := memory.New()
			defer st.Close()
			var logs logBuffer
			debug := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			r := newReceiver(t, st, &fakeIngest{}, newMapDS(), handoff.WithLogger(debug))
			err := r.Handoff(ctx, f.pub, handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL})
			if !errors.Is(err, c.want) || !errors.Is(err, admin.ErrUpstream) {
				t.Fatalf("Handoff: %v, want %v and admin.ErrUpstream", err, c.want)
			}
			if c.status != http.StatusOK && !strings.Contains(err.Error(), fmt.Sprint(c.status)) {
				t.Errorf("Handoff: %v, want the status named", err)
			}
			if msg := err.Error(); strings.Contains(msg, "MARKER") || strings.Contains(msg, "'M'") {
				t.Fatalf("the error quotes the frozen indexer's answer: %v", err)
			}
			if !strings.Contains(logs.String(), marker) {
				t.Fatalf("the answer's start is not in the debug log:\n%s", logs.String())
			}
		})
	}
}
