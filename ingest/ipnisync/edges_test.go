package ipnisync_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// TestBlockSizeEdgeEveryEncoding: a block of exactly WithMaxBlockSize
// bytes is read whole however it comes (with a Content-Length, chunked,
// gzip-encoded), and one byte more is refused with ErrBlockTooLarge in
// each form.
func TestBlockSizeEdgeEveryEncoding(t *testing.T) {
	const limit = 1 << 12
	fit, fitCid := rawBlock(limit)
	over, overCid := rawBlock(limit + 1)
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	blocks := map[string][]byte{fitCid.String(): fit, overCid.String(): over}
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		b := blocks[r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]]
		switch {
		case strings.HasPrefix(r.URL.Path, "/chunked/"):
			w.Write(b[:10])
			w.(http.Flusher).Flush() // no Content-Length
			w.Write(b[10:])
		case strings.HasPrefix(r.URL.Path, "/gzip/"):
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz(b))
		default:
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.Write(b)
		}
	})
	key := seededKey(t, 2)
	for _, prefix := range []string{"", "/chunked", "/gzip"} {
		c, err := ipnisync.NewURL(srv.URL+prefix, peerID(t, key), ipnisync.WithMaxBlockSize(limit), ipnisync.WithDialPolicy(privatePool))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.Block(context.Background(), fitCid); err != nil || !bytes.Equal(got, fit) {
			t.Errorf("%q: a block of exactly the limit: %d bytes, %v", prefix, len(got), err)
		}
		if _, err := c.Block(context.Background(), overCid); !errors.Is(err, ipnisync.ErrBlockTooLarge) {
			t.Errorf("%q: a block one byte over the limit: %v, want ErrBlockTooLarge", prefix, err)
		}
		c.Close()
	}
}
