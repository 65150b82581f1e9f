package interop

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipni/go-libipni/announce/httpsender"
	ipnimsg "github.com/ipni/go-libipni/announce/message"
	ipnisyncref "github.com/ipni/go-libipni/dagsync/ipnisync"
	findclient "github.com/ipni/go-libipni/find/client"
	"github.com/libp2p/go-libp2p"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// TestReferenceBurstIngested is the announce pattern of the reference
// load generator (storetheindex loadtest loadgen): many go-libipni
// publishers behind one address, over HTTP and over libp2p, each
// publishing advertisement after advertisement and announcing after every
// one with go-libipni's httpsender, which treats any answer but 2xx as
// fatal. Against an indexer with the default announce limits every
// announce must be accepted (an announce of a publisher already queued
// or walking only marks it to be walked again; a verified publisher has a
// budget of its own, not its address's) and every multihash ingested.
func TestReferenceBurstIngested(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/indexer")
	}
	t.Parallel() // with the other test that runs a node: each mostly waits on its node
	const (
		perKind = 12 // publishers over HTTP, and as many over libp2p
		ads     = 10 // each announced as soon as it is published
	)
	bin := proctest.Build(t, "github.com/indexkit/indexkit/examples/indexer")
	node := startIndexer(t, bin)
	ingest := &url.URL{Scheme: "http", Host: node.Addr("ingest"), Path: "/announce"}

	type burstPub struct {
		*refPublisher
		heads []cid.Cid
	}
	var pubs []burstPub
	for n := range 2 * perKind {
		name := fmt.Sprintf("burst-%d", n)
		pk, prov := key(t, keyTypes[0], 200+2*n), key(t, keyTypes[0], 201+2*n)
		lsys, _ := refLinkSystem()
		heads, want := buildRefChainSteps(t, lsys, name, prov, ads, 100*n)
		var pub *ipnisyncref.Publisher
		var err error
		if n < perKind {
			pub, err = ipnisyncref.NewPublisher(lsys, pk.priv, ipnisyncref.WithHTTPListenAddrs("127.0.0.1:0"))
		} else {
			h, herr := libp2p.New(libp2p.Identity(pk.priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
			if herr != nil {
				t.Fatalf("libp2p host: %v", herr)
			}
			t.Cleanup(func() { _ = h.Close() })
			pub, err = ipnisyncref.NewPublisher(lsys, pk.priv, ipnisyncref.WithStreamHost(h))
			if err == nil {
				defer func() { pubs[n].addrs = h.Addrs() }()
			}
		}
		if err != nil {
			t.Fatalf("go-libipni NewPublisher: %v", err)
		}
		t.Cleanup(func() { _ = pub.Close() })
		pubs = append(pubs, burstPub{&refPublisher{name: name, pub: pub, id: pk.id, addrs: pub.Addrs(), want: want}, heads})
	}
	for n := perKind; n < 2*perKind; n++ {
		if len(pubs[n].addrs) == 0 || pubs[n].addrs[0].String() == "" {
			t.Fatalf("%s: no libp2p address", pubs[n].name)
		}
	}

	// The burst: every publisher at once, an announce after every ad.
	ctx, cancel := context.WithTimeout(context.Background(), indexerWait)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(pubs))
	for _, p := range pubs {
		wg.Go(func() {
			// A transport of its own, as a publisher in its own process
			// has: the sender's Close closes its client's idle
			// connections, which on the shared http.DefaultTransport
			// breaks another sender's PUT that just took one ("connection
			// broken: CloseIdleConnections called").
			hc := &http.Client{Timeout: indexerWait, Transport: &http.Transport{}}
			s, err := httpsender.New([]*url.URL{ingest}, p.id, httpsender.WithClient(hc))
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for i, h := range p.heads {
				p.pub.SetRoot(h)
				msg := ipnimsg.Message{Cid: h}
				msg.SetAddrs(p.addrs)
				if err := s.Send(ctx, msg); err != nil {
					errs <- fmt.Errorf("%s: announce of ad %d: %w (go-libipni's publisher would stop here)", p.name, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	sent := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	fc, err := findclient.New("http://" + node.Addr("find"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range pubs {
		total += len(p.want)
	}
	for {
		found := 0
		for _, p := range pubs {
			for m := range p.want {
				resp, err := fc.Find(ctx, multihash.Multihash(m))
				if err == nil && len(resp.MultihashResults) == 1 {
					found++
				}
			}
		}
		if found == total {
			t.Logf("%d publishers sent %d announces from one address in %v; all %d multihashes ingested %v after the first",
				len(pubs), len(pubs)*ads, sent.Round(time.Millisecond), total, time.Since(start).Round(100*time.Millisecond))
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d multihashes ingested after %v", found, total, indexerWait)
		case <-time.After(300 * time.Millisecond):
		}
	}
}
