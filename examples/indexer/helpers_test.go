package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/internal/chaingen"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 60 * time.Second

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the indexer once per test run and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "indexer-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "indexer")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a running indexer process.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	addrs map[string]string // listener name -> address
	done  chan struct{}     // closed when the process has exited
	err   error             // Wait's error, once done

	mu  sync.Mutex
	log bytes.Buffer
}

// startNode runs the binary on dir with every listener on 127.0.0.1:0 and
// extra flags, and waits until it has logged its listening addresses.
func startNode(t *testing.T, dir string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"-dir", dir, "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-metrics", "127.0.0.1:0", "-p2p", "none", "-log-level", "debug"}, extra...)
	p := &proc{t: t, cmd: exec.Command(binary(t), args...), addrs: make(map[string]string), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			if f := logfmt(line); f["msg"] == "listening" {
				p.addrs[f["name"]] = f["addr"]
			} else if f["msg"] == "starting" {
				once.Do(func() { close(started) })
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", dir, p.logText())
		}
	})
	select {
	case <-started:
	case <-p.done:
		t.Fatalf("indexer exited at start: %v\n%s", p.err, p.logText())
	case <-time.After(waitTimeout):
		t.Fatalf("indexer did not start\n%s", p.logText())
	}
	return p
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *proc) url(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.addrs[name]
	if a == "" {
		p.t.Fatalf("no %s listener logged", name)
	}
	return "http://" + a
}

// stop sends SIGTERM and waits for the process to exit with status 0.
func (p *proc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		p.t.Fatalf("indexer did not stop on SIGTERM\n%s", p.logText())
	}
	if p.err != nil {
		p.t.Fatalf("indexer exited with %v\n%s", p.err, p.logText())
	}
}

// logfmt parses the key=value pairs of a slog text line.
func logfmt(line string) map[string]string {
	out := make(map[string]string)
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			break
		}
		key := line[:eq]
		line = line[eq+1:]
		var val string
		if strings.HasPrefix(line, `"`) {
			end := 1
			for end < len(line) && (line[end] != '"' || line[end-1] == '\\') {
				end++
			}
			val = strings.ReplaceAll(line[1:min(end, len(line))], `\"`, `"`)
			line = line[min(end+1, len(line)):]
		} else {
			sp := strings.IndexByte(line, ' ')
			if sp < 0 {
				sp = len(line)
			}
			val, line = line[:sp], line[sp:]
		}
		out[key] = val
	}
	return out
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
