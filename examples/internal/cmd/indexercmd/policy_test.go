package indexercmd_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/internal/cmd/indexercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
)

// A node dials the publisher an announce names only where its dial
// policy allows: by default not on loopback, whatever the announce says;
// with -allow-private-addrs it does, and says so at start.
func TestDialPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, err := publishernode.NewPublisher(publishernode.Spec{Seed: 11, Ads: 2, Entries: 3, ChunkSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		pub.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	addr := multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%s/http/p2p/%s", u.Port(), pub.ID()))

	// status runs a node with extra flags, announces the publisher to it,
	// and returns the node's first ingest status of the publisher whose
	// walk has failed or applied ads, and the node's log.
	status := func(extra ...string) (admin.PublisherStatus, *logtap.Tap) {
		t.Helper()
		rctx, stop := context.WithCancel(ctx)
		tap := logtap.New(io.Discard)
		done := make(chan error, 1)
		go func() {
			args := []string{"-dir", t.TempDir(), "-store", "memory", "-find", "127.0.0.1:0",
				"-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-metrics", "", "-p2p", "none"}
			done <- indexercmd.Main(rctx, append(args, extra...), tap)
			tap.Close()
		}()
		defer func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("indexer: %v", err)
			}
		}()
		ingest, err := tap.Addr(ctx, "ingest")
		if err != nil {
			t.Fatal(err)
		}
		adminAddr, err := tap.Addr(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tap.WaitMsg(ctx, "starting"); err != nil {
			t.Fatal(err)
		}
		s, err := announce.NewHTTPSender([]string{"http://" + ingest}, pub.ID())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
			t.Fatal(err)
		}
		ac, err := admin.NewClient("http://" + adminAddr)
		if err != nil {
			t.Fatal(err)
		}
		for {
			sts, err := ac.IngestStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range sts {
				if st.Publisher == pub.ID() && (st.LastError != "" || st.AdsApplied > 0) {
					return st, tap
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("no walk of the publisher ended: %+v", sts)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}

	st, _ := status()
	if !strings.Contains(st.LastError, "netpolicy: 127.0.0.1: loopback address not allowed") || st.AdsApplied != 0 {
		t.Fatalf("default policy: status %+v, want a walk refused by the dial policy", st)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("default policy: the loopback publisher got %d requests", n)
	}

	st, tap := status("-allow-private-addrs")
	if st.LastError != "" || st.AdsApplied == 0 || hits.Load() == 0 {
		t.Fatalf("-allow-private-addrs: status %+v after %d requests, want ads applied", st, hits.Load())
	}
	warn, err := tap.WaitMsg(ctx, "dialling private addresses")
	if err != nil || warn["level"] != "WARN" || warn["flag"] != "-allow-private-addrs" {
		t.Fatalf("-allow-private-addrs: start log %v, %v; want a WARN naming the flag", warn, err)
	}
}
