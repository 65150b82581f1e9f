package scatternode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/indexkit/indexkit/internal/testbed/browsertest"
	"github.com/indexkit/indexkit/scatter/web"
)

// screenshotEnv names the file the browser test saves a screenshot of the
// page in (a PNG), after letting the pool run a little longer so that the
// chart has a history: the README's docs/web.png is made with
//
//	INDEXKIT_WEB_SCREENSHOT=$PWD/docs/web.png go test -run TestWebPageInBrowser ./examples/scatternode/
const screenshotEnv = "INDEXKIT_WEB_SCREENSHOT"

// rendered is one provider row of the page's answer.
type rendered struct {
	Peer      string
	Protocols []string
	Addrs     []string
}

// TestWebPageInBrowser drives headless Chromium against a running pool:
// it types a CID of a generated publisher into the page's search box,
// submits, and checks the providers, protocols and addresses rendered
// against the publisher's ground truth, the complete status line, the
// pool view (one row per indexer, the publishers from the assigner), and
// that the browser logged no JavaScript error or exception.
func TestWebPageInBrowser(t *testing.T) {
	bin := browsertest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := localpool.Start(ctx, localpool.Config{Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "pebble",
		Entries: 5, Interval: 200 * time.Millisecond, MaxAds: 20, FreezeBudget: 0, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Twelve ads at least, so that every kind of metadata has been
	// advertised (ad 11 has graphsync and the HTTP gateway), then
	// everything indexed.
	for {
		truth, err := p.Truth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if truth.Publishers[0].Ads >= 12 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := p.WaitComplete(ctx); err != nil {
		t.Fatal(err)
	}
	front := p.URLs().Find

	// The ground truth of one multihash of publisher-0 that only it
	// provides: its provider ID, its addresses, the protocols of its
	// metadata.
	truth, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pt := truth.Publishers[0]
	// Of those, one whose metadata has graphsync before another protocol
	// if any (graphsync's payload is dag-cbor, which the page must skip to
	// read what follows), else the most protocols.
	var entry publishernode.Entry
	most := 0
	for _, e := range pt.Entries {
		if slices.ContainsFunc(e.Values, func(v publishernode.Value) bool { return v.ProviderID != pt.Publisher }) {
			continue
		}
		n := 0
		for _, v := range e.Values {
			md, err := metadata.Decode(v.Metadata)
			if err != nil {
				t.Fatal(err)
			}
			ps := md.Protocols() // sorted by code
			n += len(ps)
			for i, pr := range ps {
				if pr.ID() == metadata.CodeGraphsyncFilecoinV1 {
					n += 5
					if i < len(ps)-1 {
						n += 10
					}
				}
			}
		}
		if n > most {
			entry, most = e, n
		}
	}
	if entry.Multihash == "" {
		t.Fatalf("publisher-0 has no multihash of its own among %d", len(pt.Entries))
	}
	spec, err := p.PublisherSpec(localpool.RolePublishers, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := publishernode.NewPublisher(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := rendered{Peer: pt.Publisher, Addrs: slices.Sorted(slices.Values(pub.ProviderAddrs()))}
	for _, v := range entry.Values {
		md, err := metadata.Decode(v.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range md.Protocols() {
			if name := protocolName(pr.ID()); !slices.Contains(want.Protocols, name) {
				want.Protocols = append(want.Protocols, name)
			}
		}
	}
	slices.Sort(want.Protocols)
	mh, err := multihash.FromB58String(entry.Multihash)
	if err != nil {
		t.Fatal(err)
	}
	key := cid.NewCidV1(cid.Raw, mh).String()
	t.Logf("looking up %s: %+v", key, want)

	bctx, stop := browsertest.Start(ctx, t, bin)
	defer stop()
	// Every console message, exception and browser log entry, collected
	// from the start.
	var (
		mu       sync.Mutex
		messages []chromedp.ConsoleMessage
		done     = make(chan struct{})
	)
	cctx, stopConsole := context.WithCancel(bctx)
	console := chromedp.Console(cctx)
	go func() {
		defer close(done)
		for m, err := range console {
			if err != nil {
				return
			}
			mu.Lock()
			messages = append(messages, m)
			mu.Unlock()
		}
	}()
	problems := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, m := range messages {
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
			}
		}
		return out
	}

	err = chromedp.Do(bctx,
		chromedp.Navigate(front+"/"),
		chromedp.WaitVisible(chromedp.CSS("#q")),
		chromedp.SendKeys(chromedp.CSS("#q"), key),
		chromedp.Click(chromedp.CSS("#search button")),
		chromedp.WaitVisible(chromedp.CSS("#providers tr.provider")),
	)
	if err != nil {
		t.Fatalf("searching %s in the browser: %v (problems: %q)", key, err, problems())
	}
	answer, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#answer")))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]rendered](`[...document.querySelectorAll("#providers tr.provider")].map(tr => ({
		Peer: tr.dataset.peer,
		Protocols: [...tr.querySelectorAll("td.protocols .badge")].map(b => b.textContent),
		Addrs: [...tr.querySelectorAll("td.addrs li")].map(li => li.textContent)}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Peer != want.Peer || !slices.Equal(rows[0].Protocols, want.Protocols) || !slices.Equal(rows[0].Addrs, want.Addrs) {
		t.Errorf("the page shows %+v for %s; want the ground truth %+v", rows, key, want)
	}
	if wantAnswer := "complete: every backend answered. 1 provider for CID " + key; answer != wantAnswer {
		t.Errorf("status line %q, want %q", answer, wantAnswer)
	}

	// The pool view: a row per indexer, and the assigner's publishers.
	type poolView struct {
		URLs, States []string
		Publishers   int
		Totals       string
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelectorAll("#indexers tr.indexer").length === 2 && document.querySelectorAll("#publishers tr.publisher").length === 2`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the pool view: %v (problems: %q)", err, problems())
	}
	view, err := chromedp.Run(bctx, chromedp.Evaluate[poolView](`({
		URLs: [...document.querySelectorAll("#indexers tr.indexer td.url")].map(td => td.firstChild.textContent),
		States: [...document.querySelectorAll("#indexers tr.indexer")].map(tr => tr.dataset.state),
		Publishers: document.querySelectorAll("#publishers tr.publisher").length,
		Totals: document.getElementById("totals").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	var wantURLs []string
	for _, ix := range p.URLs().Indexers {
		wantURLs = append(wantURLs, ix.Find)
	}
	if !slices.Equal(view.URLs, wantURLs) || slices.Contains(view.States, web.StateDown) || !strings.Contains(view.Totals, "2 indexers") {
		t.Errorf("pool view: indexers %q in states %q, totals %q; want %q, none down", view.URLs, view.States, view.Totals, wantURLs)
	}
	t.Logf("pool view: states %q, %s", view.States, view.Totals)

	// The page's multihash counts are the view's (the pool's snapshot),
	// exact on Pebble, with no "about", and sum to the publishers' live
	// multihashes (replication 1): Pebble's estimate showed 75 on an
	// empty node and lagged what was held.
	// The publishers stop at MaxAds; then the indexers hold their truth.
	var (
		snap  *localpool.Snapshot
		total uint64
		live  uint64
	)
	for {
		if snap, err = p.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		total, live = 0, 0
		for _, ix := range snap.Indexers {
			total += ix.Multihashes
		}
		stopped := true
		for _, ps := range snap.Publishers {
			live += uint64(ps.Multihashes)
			stopped = stopped && ps.Ads == 20 && ps.Lag == 0
		}
		if stopped && total == live {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the indexers hold %d multihashes, the publishers' truth %d: %v", total, live, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	var wantCounts []string
	for _, ix := range snap.Indexers {
		if !ix.MultihashesExact {
			t.Errorf("%s: %d multihashes, not exact", ix.Name, ix.Multihashes)
		}
		wantCounts = append(wantCounts, thousands(ix.Multihashes))
	}
	wantTotal := thousands(total) + " multihashes held"
	counts, err := chromedp.Run(bctx, chromedp.Poll[[]string](fmt.Sprintf(`(() => {
		const c = [...document.querySelectorAll("#indexers tr.indexer td.entries")].map(td => td.textContent);
		return JSON.stringify(c) === %q && document.getElementById("totals").textContent.includes(%q) ? c : null;
	})()`, mustJSON(t, wantCounts), wantTotal), chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		got, _ := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#indexers tr.indexer td.entries")].map(td => td.textContent).concat([document.getElementById("totals").textContent])`))
		t.Errorf("the page's counts %q; want the view's %q and %q: %v", got, wantCounts, wantTotal, err)
	} else {
		t.Logf("the page's counts: %q, %s", counts, wantTotal)
	}

	// A screenshot of the page: a PNG of the window's size that is not
	// blank. With INDEXKIT_WEB_SCREENSHOT, after a minute of history, for
	// the README.
	path := os.Getenv(screenshotEnv)
	if path != "" {
		screenshot(bctx, t, p, entry)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	checkScreenshot(t, shot)
	if path != "" {
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s, %d bytes", path, len(shot))
	}
	stopConsole()
	<-done
	if ps := problems(); len(ps) > 0 {
		t.Errorf("the browser logged %d errors, warnings or exceptions:\n%s", len(ps), strings.Join(ps, "\n"))
	}
}

// screenshot lets the pool run for a while with lookups going on and a
// new publisher every 20 s (each ingests its 20 ads in about 4 s), so
// that the chart has a history of both, and sizes the window for the
// README's shot.
func screenshot(ctx context.Context, t *testing.T, p *localpool.Pool, e publishernode.Entry) {
	start := time.Now()
	added := 0
	for time.Since(start) < 60*time.Second {
		if time.Since(start) >= time.Duration(added)*20*time.Second && added < 3 {
			if _, err := p.AddPublishers(ctx, 1); err != nil {
				t.Fatal(err)
			}
			added++
		}
		// 4 to 20 lookups a second, changing slowly.
		n := 3 + int(2*math.Sin(time.Since(start).Seconds()/6))
		for range n {
			resp, err := http.Get(p.URLs().Find + "/multihash/" + e.Multihash)
			if err == nil {
				resp.Body.Close()
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 820)); err != nil {
		t.Fatal(err)
	}
}

// checkScreenshot fails t unless shot decodes as a PNG of at least
// 640×480 with more than a few colours (a page, not a blank window).
func checkScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot of %d bytes does not decode as PNG: %v", len(shot), err)
	}
	b := img.Bounds()
	colours := map[color.RGBA]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			colours[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	if b.Dx() < 640 || b.Dy() < 480 || len(colours) < 16 {
		t.Fatalf("screenshot %v with %d colours: want at least 640×480 and 16 colours", b.Size(), len(colours))
	}
	t.Logf("screenshot: %v, %d colours, %d bytes", b.Size(), len(colours), len(shot))
}

// thousands formats n as the page does (toLocaleString("en-US")).
func thousands(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// protocolName is the multicodec name of a transport code, as the page
// shows it.
func protocolName(code uint64) string {
	switch code {
	case metadata.CodeBitswap:
		return "transport-bitswap"
	case metadata.CodeGraphsyncFilecoinV1:
		return "transport-graphsync-filecoinv1"
	case metadata.CodeIPFSGatewayHTTP:
		return "transport-ipfs-gateway-http"
	case metadata.CodeFilecoinPieceHTTP:
		return "transport-filecoin-piece-http"
	}
	return fmt.Sprintf("unknown-0x%04x", code)
}
