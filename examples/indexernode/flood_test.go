package indexernode_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/netproxy"
)

// tarpit accepts TCP connections on 127.0.0.1 and never answers, until
// the test ends; it returns its port.
func tarpit(t *testing.T) int {
	t.Helper()
	tp, err := netproxy.ListenTarpit()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp.Addr().Port
}

// announceFrom PUTs the CBOR announce of c by publisher at addr to url
// with client, and returns the status (0 when the request failed).
func announceFrom(ctx context.Context, client *http.Client, url string, c cid.Cid, addr multiaddr.Multiaddr) int {
	body, err := announce.Message{Cid: c, Addrs: []multiaddr.Multiaddr{addr}}.EncodeCBOR()
	if err != nil {
		return 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url+"/announce", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// testCID is a CIDv1 (raw) of s.
func testCID(t *testing.T, s string) cid.Cid {
	t.Helper()
	h, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, h)
}

// A node with default flags under a flood of announces of publishers
// that never verified, whose addresses accept connections and never
// answer (a tarpit), from 60 networks that keep announcing, indexes a new
// honest publisher announced from another network within 60 s: the
// flood's sources hold no more than their fair share of the table of
// publishers that never verified, the tarpit's head checks end after a
// short deadline, and sources whose publishers failed wait behind those
// whose did not.
func TestTarpitFloodLetsHonestPublisherIn(t *testing.T) {
	lane.Integration(t, "floods a node with 1,500 announces")
	const (
		sources   = 60
		perSource = 25 // 1,500 publishers
		within    = 60 * time.Second
	)
	ctx, cancel := context.WithTimeout(t.Context(), within+30*time.Second)
	defer cancel()
	urls, stop := startIndexer(ctx, t, t.TempDir(), memoryStore)
	defer stop()
	port := tarpit(t)

	// Each source is its own /24 of loopback: 127.0.s.1.
	flood, stopFlood := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopFlood()  // first: a failure stops the flood before it waits for it
	var codes sync.Map // status → count, for the log
	for s := 1; s <= sources; s++ {
		addrs := make([]multiaddr.Multiaddr, perSource)
		for k := range addrs {
			addrs[k] = multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http/p2p/%s", port, newID(t)))
		}
		tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(s), 1)}}).DialContext}
		client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		wg.Go(func() {
			defer tr.CloseIdleConnections()
			// All at once, then one every two seconds with a new head,
			// until the test ends: the flood keeps the table full.
			for round := 0; ; round++ {
				n := perSource
				if round > 0 {
					n = 1
				}
				for k := range n {
					code := announceFrom(flood, client, urls.ingest, testCID(t, fmt.Sprint(s, round, k)), addrs[(round+k)%perSource])
					v, _ := codes.LoadOrStore(code, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
				select {
				case <-flood.Done():
					return
				case <-time.After(2 * time.Second):
				}
			}
		})
	}
	// Let the first wave land and the checks start.
	time.Sleep(3 * time.Second)

	pub, addr := servePublisher(t, publishernode.Spec{Seed: 27, Ads: 3, Entries: 5, ChunkSize: 2})
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 200, 1)}}).DialContext}
	defer tr.CloseIdleConnections()
	start := time.Now()
	// A table full for everyone at that moment answers 503 with a
	// Retry-After (a loaded machine's head checks end late): the honest
	// publisher tries again, once a second, as a publisher should, and
	// the 60 s count from its first try.
	tries := 0
	for {
		tries++
		code := announceFrom(ctx, &http.Client{Transport: tr, Timeout: 5 * time.Second}, urls.ingest, pub.Head(), addr)
		if code == http.StatusNoContent {
			break
		}
		if code != http.StatusServiceUnavailable || time.Since(start) > within {
			t.Fatalf("the honest publisher's announce during the flood, try %d after %v: status %d, want 204 (or 503 for a while)", tries, time.Since(start).Round(time.Millisecond), code)
		}
		time.Sleep(time.Second)
	}
	t.Logf("the honest publisher's announce taken at try %d", tries)
	wctx, wcancel := context.WithTimeout(ctx, within-time.Since(start))
	defer wcancel()
	waitTruth(wctx, t, urls.find, pub)
	took := time.Since(start)
	stopFlood()
	wg.Wait()
	var summary []string
	codes.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%v: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("honest publisher indexed %v after its announce, under a flood of %d publishers from %d sources (flood statuses %v)",
		took.Round(100*time.Millisecond), sources*perSource, sources, summary)
}
