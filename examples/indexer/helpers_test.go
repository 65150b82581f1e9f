package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 60 * time.Second

// indexerPkg is the command these tests build and run.
const indexerPkg = "github.com/indexkit/indexkit/examples/indexer"

// proc is a running indexer process.
type proc struct {
	*proctest.Proc
	t *testing.T
}

// startNode runs the indexer binary bin on dir with every listener on
// 127.0.0.1:0 and extra flags, and waits until it has logged msg=starting,
// which it does after its listening addresses. The test publishers are on
// loopback too, so the node may dial private addresses.
func startNode(t *testing.T, bin, dir string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"-dir", dir, "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-metrics", "127.0.0.1:0", "-p2p", "none", "-allow-private-addrs", "-log-level", "debug"}, extra...)
	p := proctest.Start(t, bin, args...)
	p.WaitMsg("starting")
	return &proc{Proc: p, t: t}
}

func (p *proc) url(name string) string {
	p.t.Helper()
	return "http://" + p.Addr(name)
}

// stop sends SIGTERM and waits for the process to exit with status 0.
func (p *proc) stop() {
	p.t.Helper()
	if code := p.Stop(); code != 0 {
		p.t.Fatalf("indexer exited with code %d\n%s", code, p.Output())
	}
}

// waitFor polls cond until it holds, failing the test after waitTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// publisher serves a chain over ipnisync on an httptest server and records
// the CIDs of the blocks requested.
type publisher struct {
	chain *chaingen.Chain
	pub   *ipnisync.Publisher
	srv   *httptest.Server
	addr  multiaddr.Multiaddr // /ip4/127.0.0.1/tcp/N/http

	mu  sync.Mutex
	got map[cid.Cid]int
}

func newPublisher(t *testing.T, chain *chaingen.Chain) *publisher {
	t.Helper()
	p := &publisher{chain: chain, got: make(map[cid.Cid]int)}
	var err error
	if p.pub, err = ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(chain.Block)); err != nil {
		t.Fatal(err)
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := cid.Decode(strings.TrimPrefix(r.URL.Path, ipnisync.IPNIPath+"/")); err == nil {
			p.mu.Lock()
			p.got[c]++
			p.mu.Unlock()
		}
		p.pub.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	host := strings.TrimPrefix(p.srv.URL, "http://")
	h, port, _ := strings.Cut(host, ":")
	if p.addr, err = multiaddr.NewMultiaddr("/ip4/" + h + "/tcp/" + port + "/http"); err != nil {
		t.Fatal(err)
	}
	p.setHead(t)
	return p
}

func (p *publisher) setHead(t *testing.T) {
	t.Helper()
	if err := p.pub.SetHead(context.Background(), p.chain.Head()); err != nil {
		t.Fatal(err)
	}
}

// requests returns how many times c was requested.
func (p *publisher) requests(c cid.Cid) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got[c]
}

func (p *publisher) resetRequests() {
	p.mu.Lock()
	p.got = make(map[cid.Cid]int)
	p.mu.Unlock()
}

// announce PUTs the chain's head to an indexer's ingest API as the
// reference assigner does: CBOR, Content-Type application/octet-stream.
func (p *publisher) announce(t *testing.T, ingestURL string) {
	t.Helper()
	p2p, err := multiaddr.NewMultiaddr("/p2p/" + p.chain.Publisher.String())
	if err != nil {
		t.Fatal(err)
	}
	body, err := announce.Message{Cid: p.chain.Head(), Addrs: []multiaddr.Multiaddr{p.addr.Encapsulate(p2p)}}.EncodeCBOR()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, ingestURL+"/ingest/announce", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("announce: %s %s", resp.Status, b)
	}
}

// entryChunks returns the CIDs of the entry chunks of ads from..to-1, and
// their multihashes.
func entryChunks(t *testing.T, chain *chaingen.Chain, from, to int) ([]cid.Cid, []multihash.Multihash) {
	t.Helper()
	var cids []cid.Cid
	var mhs []multihash.Multihash
	for i := from; i < to; i++ {
		ad, err := chain.Ad(i)
		if err != nil {
			t.Fatal(err)
		}
		if !ad.HasEntries() {
			continue
		}
		for c := ad.Entries; c.Defined(); {
			b, err := chain.Block(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := schema.DecodeEntryChunk(c, b)
			if err != nil {
				t.Fatal(err)
			}
			cids = append(cids, c)
			mhs = append(mhs, ch.Entries...)
			c = ch.Next
		}
	}
	return cids, mhs
}

// httpDo sends a request and returns the status and body.
func httpDo(t *testing.T, method, url string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// getJSON GETs url, wants 200, and decodes the body into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, b := httpDo(t, http.MethodGet, url, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
}
