package ipnisync

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
)

const (
	// IPNIPath is the path of the protocol under a publisher's base URL:
	// GET IPNIPath/head and GET IPNIPath/{cid}.
	IPNIPath = "/ipni/v1/ad"
	// ProtocolID is the libp2p protocol ID of the protocol when served over
	// libp2p streams with libp2phttp; it is the same string as the path.
	ProtocolID = protocol.ID(IPNIPath)

	// immutable is the Cache-Control of CID resources, as the IPNI HTTP
	// provider specification requires.
	immutable = "public, max-age=29030400, immutable"
	// noCache is the Cache-Control of the head, which changes.
	noCache = "no-cache, no-store, must-revalidate"
	// gzipMin is the shortest body a Publisher compresses.
	gzipMin = 512
)

// A BlockSource gives a [Publisher] the blocks of the chains it serves,
// advertisements and entry chunks alike, as stored: the publisher serves
// the bytes unchanged. Get returns an error wrapping [ErrNotFound] for a
// block it does not hold, which the publisher answers with 404; any other
// error gives 500. Get must be safe for concurrent use.
type BlockSource interface {
	Get(ctx context.Context, c cid.Cid) ([]byte, error)
}

// BlockSourceFunc adapts a function to a [BlockSource].
type BlockSourceFunc func(ctx context.Context, c cid.Cid) ([]byte, error)

// Get calls f.
func (f BlockSourceFunc) Get(ctx context.Context, c cid.Cid) ([]byte, error) { return f(ctx, c) }

// Publisher serves an advertisement chain with the IPNI HTTP publisher
// protocol. It is an http.Handler; see the package documentation for the
// paths it answers. It is safe for concurrent use.
type Publisher struct {
	key    crypto.PrivKey
	id     peer.ID
	src    BlockSource
	topic  string
	gzip   bool
	logger *slog.Logger

	mu      sync.RWMutex
	head    cid.Cid
	headDoc []byte // the signed head, encoded; nil when there is no head
}

var _ http.Handler = (*Publisher)(nil)

// NewPublisher returns a publisher that signs heads with key and serves
// blocks from src. It has no head until [Publisher.SetHead]. Options:
// [WithTopic], [WithGzip], [WithPublisherLogger].
func NewPublisher(key crypto.PrivKey, src BlockSource, opts ...PublisherOption) (*Publisher, error) {
	if key == nil {
		return nil, errors.New("ipnisync: new publisher: nil key")
	}
	if src == nil {
		return nil, errors.New("ipnisync: new publisher: nil block source")
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("ipnisync: new publisher: key: %w", err)
	}
	cfg, err := newPublisherConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Publisher{
		key:    key,
		id:     id,
		src:    src,
		topic:  cfg.topic,
		gzip:   cfg.gzip,
		logger: cfg.logger.With("publisher", id.String()),
	}, nil
}

// ID returns the publisher's peer ID, the one its heads are signed by.
func (p *Publisher) ID() peer.ID { return p.id }

// Head returns the current head, cid.Undef if there is none.
func (p *Publisher) Head() cid.Cid {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.head
}

// SetHead makes c the head the publisher serves, signing it once (setting
// the current head again does nothing). cid.Undef removes the head, after
// which GET head answers 204. The block of c should be in the source
// before its head is set, as clients fetch it next.
func (p *Publisher) SetHead(ctx context.Context, c cid.Cid) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ipnisync: set head: %w", err)
	}
	if p.Head().Equals(c) {
		return nil
	}
	var doc []byte
	if c.Defined() {
		h, err := SignHead(p.key, c, p.topic)
		if err != nil {
			return err
		}
		if doc, err = h.Encode(); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.head, p.headDoc = c, doc
	p.mu.Unlock()
	p.logger.Debug("ipnisync: head set", "cid", c.String())
	return nil
}

// ServeHTTP answers GET (and HEAD) requests for head and CID resources.
//
// The path may carry the protocol path or not: "/ipni/v1/ad/head" and
// "/head" are both the head, "/ipni/v1/ad/{cid}" and "/{cid}" both a
// block. So the publisher can be mounted at the root of a server, under
// http.StripPrefix for a prefix (the multiaddr http-path), or through
// [Publisher.MountLibp2p], which strips the protocol path. A request for
// any other path gets 404, a path segment that is not a CID gets 400 and a
// method other than GET or HEAD gets 405.
func (p *Publisher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "ipnisync: method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, IPNIPath)
	rsrc, ok := strings.CutPrefix(rest, "/")
	if !ok || rsrc == "" || strings.Contains(rsrc, "/") {
		http.Error(w, "ipnisync: no such resource: "+r.URL.Path, http.StatusNotFound)
		return
	}
	if rsrc == "head" {
		p.serveHead(w)
		return
	}
	c, err := cid.Decode(rsrc)
	if err != nil {
		http.Error(w, fmt.Sprintf("ipnisync: invalid CID %q: %v", rsrc, err), http.StatusBadRequest)
		return
	}
	p.serveBlock(w, r, c)
}

func (p *Publisher) serveHead(w http.ResponseWriter) {
	p.mu.RLock()
	doc := p.headDoc
	p.mu.RUnlock()
	w.Header().Set("Cache-Control", noCache)
	if doc == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	_, _ = w.Write(doc)
}

func (p *Publisher) serveBlock(w http.ResponseWriter, r *http.Request, c cid.Cid) {
	etag := `"` + c.String() + `"`
	h := w.Header()
	if p.gzip {
		h.Set("Vary", "Accept-Encoding")
	}
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		h.Set("ETag", etag)
		h.Set("Cache-Control", immutable)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	data, err := p.src.Get(r.Context(), c)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			http.Error(w, "ipnisync: cid not found: "+c.String(), http.StatusNotFound)
			return
		}
		p.logger.Error("ipnisync: cannot load block", "cid", c.String(), "err", err)
		http.Error(w, "ipnisync: cannot load block "+c.String(), http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", contentType(c.Prefix().Codec))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", immutable)
	h.Set("ETag", etag)
	if p.gzip && len(data) >= gzipMin && acceptsGzip(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level never fails
		_, err = zw.Write(data)
		if err == nil {
			err = zw.Close()
		}
		if err != nil {
			p.logger.Debug("ipnisync: write block", "cid", c.String(), "err", err)
		}
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// contentType names the media type of a block of codec, as the IPNI HTTP
// provider specification reads them: application/json is dag-json and
// application/cbor is dag-cbor.
func contentType(codec uint64) string {
	switch codec {
	case schema.DagJSON, 0x0200: // dag-json, json
		return "application/json"
	case schema.DagCBOR, 0x51: // dag-cbor, cbor
		return "application/cbor"
	default:
		return "application/octet-stream"
	}
}

// etagMatch reports whether an If-None-Match header names etag (or *).
func etagMatch(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding values accept gzip.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(t), ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// MountLibp2p serves the publisher on h under [ProtocolID], at path
// [IPNIPath], so that clients reach it over libp2p streams (and over h's
// HTTP listeners, if any); h's well-known resource lists the mapping. h's
// stream host, if any, must have the publisher's peer ID, since clients
// check the head's signer against the peer they dialled. The caller runs
// h.Serve and closes h.
func (p *Publisher) MountLibp2p(h *libp2phttp.Host) error {
	if h == nil {
		return errors.New("ipnisync: mount libp2p: nil host")
	}
	if h.StreamHost != nil && h.StreamHost.ID() != p.id {
		return fmt.Errorf("ipnisync: mount libp2p: stream host is %s, publisher is %s", h.StreamHost.ID(), p.id)
	}
	h.SetHTTPHandlerAtPath(ProtocolID, IPNIPath+"/", p)
	return nil
}
