package indexernode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/scatter/find"
)

// An indexer stopped while its publisher goes on publishing, and started
// again, walks the ads it missed without a new announce: at start it asks
// every publisher it follows for its head.
func TestResyncAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, addr := servePublisher(t, publishernode.Spec{Seed: 9, Ads: 4, Entries: 3, ChunkSize: 2, RemoveEvery: 3, UpdateEvery: 2})
	dir := t.TempDir()

	// First run: the publisher announces its head; the indexer walks it.
	find, stop := startIndexer(ctx, t, dir)
	s, err := announce.NewHTTPSender([]string{find.ingest}, pub.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
		t.Fatal(err)
	}
	waitTruth(ctx, t, find.find, pub)
	stop()

	// Down while the publisher publishes (its announces would be lost),
	// then started again: nobody announces.
	if err := pub.Publish(ctx, 5); err != nil {
		t.Fatal(err)
	}
	find, stop = startIndexer(ctx, t, dir)
	defer stop()
	waitTruth(ctx, t, find.find, pub)
}

// A running indexer whose publisher publishes without announcing (or whose
// announce was lost) catches up at its next poll (-poll).
func TestPollCatchesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, addr := servePublisher(t, publishernode.Spec{Seed: 10, Ads: 3, Entries: 3, ChunkSize: 2, RemoveEvery: 3, UpdateEvery: 2})

	find, stop := startIndexer(ctx, t, t.TempDir(), func(c *indexernode.Config) { c.Poll = 200 * time.Millisecond })
	defer stop()
	s, err := announce.NewHTTPSender([]string{find.ingest}, pub.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
		t.Fatal(err)
	}
	waitTruth(ctx, t, find.find, pub)
	if err := pub.Publish(ctx, 4); err != nil { // no announce
		t.Fatal(err)
	}
	waitTruth(ctx, t, find.find, pub)
}

// waitTruth waits until the find API at base answers every multihash of
// pub's truth with exactly its values.
func waitTruth(ctx context.Context, t *testing.T, base string, pub *publishernode.Publisher) {
	t.Helper()
	truth := pub.Truth(true)
	for {
		bad := ""
		for _, e := range truth.Entries {
			if msg := compareFind(ctx, base, e); msg != "" {
				bad = msg
				break
			}
		}
		if bad == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the indexer never answered the truth at %d ads: %s", truth.Ads, bad)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// compareFind asks base for e's multihash; "" when the answer is exactly
// e's values.
func compareFind(ctx context.Context, base string, e publishernode.Entry) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/multihash/"+e.Multihash, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return e.Multihash + ": " + resp.Status
	}
	var fr find.FindResponse
	if err := json.NewDecoder(resp.Body).Decode(&fr); err != nil {
		return err.Error()
	}
	var got []string
	for _, r := range fr.MultihashResults {
		for _, pr := range r.ProviderResults {
			got = append(got, fmt.Sprintf("%s/%x/%x", pr.Provider.ID, pr.ContextID, pr.Metadata))
		}
	}
	var want []string
	for _, v := range e.Values {
		want = append(want, fmt.Sprintf("%s/%x/%x", v.ProviderID, v.ContextID, v.Metadata))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Sprintf("%s: got %v, want %v", e.Multihash, got, want)
	}
	return ""
}

// An indexer on the memory store forgets its index when it stops; started
// again on the same directory, it must not believe from its walk state
// that it is up to date: announced the same head, it walks the chain
// again from scratch and answers the truth.
func TestMemoryStoreRestartWalksAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, addr := servePublisher(t, publishernode.Spec{Seed: 11, Ads: 4, Entries: 3, ChunkSize: 2, RemoveEvery: 3, UpdateEvery: 2})
	dir := t.TempDir()
	announceHead := func(ingest string) {
		t.Helper()
		s, err := announce.NewHTTPSender([]string{ingest}, pub.ID())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
			t.Fatal(err)
		}
	}

	find, stop := startIndexer(ctx, t, dir, memoryStore)
	announceHead(find.ingest)
	waitTruth(ctx, t, find.find, pub)
	stop()

	// Same directory, same head announced again: the index is empty, so
	// the walk must start over.
	find, stop = startIndexer(ctx, t, dir, memoryStore)
	defer stop()
	announceHead(find.ingest)
	waitTruth(ctx, t, find.find, pub)
}
