package indexernode_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	dspebble "github.com/ipfs/go-ds-pebble"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/announce"
)

// A data directory of an earlier version keeps the node's state in
// go-ds-leveldb under datastore/. The node moves it to Pebble under
// state/ at start, keys and values intact: the walk position survives,
// so one more advertisement costs the publisher that advertisement's
// blocks, not a walk of the whole chain again, and datastore/ is gone.
func TestStateMovedFromLevelDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, err := publishernode.NewPublisher(publishernode.Spec{Seed: 15, Ads: 8, Entries: 3, ChunkSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var blocks atomic.Int64 // requests for anything but the head
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/head") {
			blocks.Add(1)
		}
		pub.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	addr := multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%s/http/p2p/%s", u.Port(), pub.ID()))
	announceHead := func(ingestURL string) {
		t.Helper()
		s, err := announce.NewHTTPSender([]string{ingestURL}, pub.ID())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	urls, stop := startIndexer(ctx, t, dir)
	announceHead(urls.ingest)
	waitTruth(ctx, t, urls.find, pub)
	stop()
	first := blocks.Load()
	keys := stateToLevelDB(t, dir)

	urls, stop = startIndexer(ctx, t, dir)
	defer stop()
	if _, err := os.Stat(filepath.Join(dir, "datastore")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("datastore/ still there after the move: %v", err)
	}
	if err := pub.Publish(ctx, 1); err != nil {
		t.Fatal(err)
	}
	announceHead(urls.ingest)
	waitTruth(ctx, t, urls.find, pub)
	// One ad: its block and its two entry chunks.
	if again := blocks.Load() - first; again > 3 {
		t.Fatalf("after the move of %d keys the node fetched %d blocks for one new ad (%d for the first walk of 8): its walk position was lost", keys, again, first)
	}
}

// stateToLevelDB turns dir into the data directory of an earlier version:
// the node's state copied into go-ds-leveldb under datastore/, and state/
// removed. It returns how many keys it copied.
func stateToLevelDB(t *testing.T, dir string) int {
	t.Helper()
	ctx := context.Background()
	from, err := dspebble.NewDatastore(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	to, err := dsleveldb.NewDatastore(filepath.Join(dir, "datastore"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := from.Query(ctx, query.Query{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := res.Rest()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if err := to.Put(ctx, datastore.RawKey(e.Key), e.Value); err != nil {
			t.Fatal(err)
		}
	}
	if len(all) == 0 {
		t.Fatal("the node's state is empty")
	}
	if err := errors.Join(from.Close(), to.Close(), os.RemoveAll(filepath.Join(dir, "state"))); err != nil {
		t.Fatal(err)
	}
	return len(all)
}
