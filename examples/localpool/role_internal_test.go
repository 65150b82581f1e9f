package localpool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/examples/publishernode"
)

// TestServeRole runs a child's side of processes mode in this process: a
// spec on "standard input" starts its role, which serves on the port it
// says in its readyMsg line, takes a SIGHUP without dying, and stops
// cleanly when its context ends. A wrong kind is refused before the spec
// is read.
func TestServeRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := serveRole(ctx, "nope", strings.NewReader("{}"), io.Discard, nil); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("kind nope: %v, want %v", err, ErrUnknownKind)
	}
	cfg := publishernode.DefaultConfig()
	cfg.Dir = t.TempDir()
	s := roleSpec{Kind: KindPublisher, Listen: []listenSpec{{Name: "publisher-0"}}, Publisher: &cfg}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := serveRole(ctx, KindIndexer, bytes.NewReader(data), io.Discard, nil); err == nil {
		t.Fatal("a publisher's spec ran as an indexer")
	}

	tap := logtap.New(nil)
	defer tap.Close()
	hup := make(chan os.Signal, 1)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- serveRole(rctx, KindPublisher, bytes.NewReader(data), tap, hup) }()
	f, err := tap.WaitMsg(ctx, readyMsg)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := readyPorts(f, s.Listen)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(ports[0])+"/ipni/v1/ad/head", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ipni/v1/ad/head: %s, want 200", resp.Status)
	}
	hup <- syscall.SIGHUP
	if _, err := tap.WaitMsg(ctx, "SIGHUP: the role has no layout to load"); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("a stopped role returned %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}
