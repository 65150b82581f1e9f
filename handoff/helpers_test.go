package handoff_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	leveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
)

// peerID returns a deterministic Ed25519 peer ID for name.
func peerID(t testing.TB, name string) peer.ID {
	t.Helper()
	seed := sha256.Sum256([]byte("handoff test " + name))
	priv, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// adCID returns a deterministic dag-json CID standing for an ad.
func adCID(t testing.TB, name string) cid.Cid {
	t.Helper()
	mh, err := multihash.Sum([]byte(name), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.DagJSON, mh)
}

func maddrs(ss ...string) []multiaddr.Multiaddr {
	var out []multiaddr.Multiaddr
	for _, s := range ss {
		out = append(out, multiaddr.StringCast(s))
	}
	return out
}

func newMapDS() datastore.Batching { return dssync.MutexWrap(datastore.NewMapDatastore()) }

// openLevelDB opens (or reopens) a go-ds-leveldb datastore in dir, closed
// at the end of the test unless closed before.
func openLevelDB(t testing.TB, dir string) *leveldb.Datastore {
	t.Helper()
	ds, err := leveldb.NewDatastore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ds.Close() })
	return ds
}

// refProvider is one element of the reference's GET /providers, field for
// field as go-libipni find/model writes it: CIDs {"/": ...} or null, times
// RFC 3339 strings, bytes base64, a contextual ContextID as a string.
type refProvider struct {
	AddrInfo              peer.AddrInfo
	LastAdvertisement     cid.Cid
	LastAdvertisementTime string         `json:",omitempty"`
	Publisher             *peer.AddrInfo `json:",omitempty"`
	IndexCount            uint64         `json:",omitempty"`
	ExtendedProviders     *refExtended   `json:",omitempty"`
	FrozenAt              cid.Cid
	FrozenAtTime          string `json:",omitempty"`
	LastError             string `json:",omitempty"`
	LastErrorTime         string `json:",omitempty"`
}

type refExtended struct {
	Providers  []peer.AddrInfo `json:",omitempty"`
	Contextual []refContextual `json:",omitempty"`
	Metadatas  [][]byte        `json:",omitempty"`
}

type refContextual struct {
	Override  bool
	ContextID string
	Providers []peer.AddrInfo
	Metadatas [][]byte `json:",omitempty"`
}

// refFromStore converts a stored record as the reference's find API does.
func refFromStore(info store.ProviderInfo) refProvider {
	rfc := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	out := refProvider{
		AddrInfo:          info.AddrInfo,
		LastAdvertisement: info.LastAdvertisement,
		FrozenAt:          info.FrozenAt,
		FrozenAtTime:      rfc(info.FrozenAtTime),
		LastError:         info.LastError,
		LastErrorTime:     rfc(info.LastErrorTime),
	}
	if info.LastAdvertisement.Defined() {
		out.LastAdvertisementTime = rfc(info.LastAdvertisementTime)
	}
	if info.Publisher.ID != "" {
		out.Publisher = &peer.AddrInfo{ID: info.Publisher.ID, Addrs: info.Publisher.Addrs}
	}
	if x := info.ExtendedProviders; x != nil {
		ep := &refExtended{Providers: x.Providers, Metadatas: x.Metadatas}
		for _, c := range x.Contextual {
			ep.Contextual = append(ep.Contextual, refContextual{
				Override: c.Override, ContextID: string(c.ContextID), Providers: c.Providers, Metadatas: c.Metadatas,
			})
		}
		out.ExtendedProviders = ep
	}
	return out
}

// frozenNode is a frozen indexer's find API serving GET /providers.
type frozenNode struct {
	*httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	body     []byte
	status   int
}

// newFrozenNode serves the JSON of recs (or the raw body set later).
func newFrozenNode(t testing.TB, recs ...refProvider) *frozenNode {
	t.Helper()
	f := &frozenNode{status: http.StatusOK}
	if recs == nil {
		recs = []refProvider{}
	}
	f.setJSON(t, recs)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.Method != http.MethodGet || r.URL.Path != "/providers" {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		status, body := f.status, f.body
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *frozenNode) setJSON(t testing.TB, recs []refProvider) {
	t.Helper()
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	f.set(http.StatusOK, b)
}

func (f *frozenNode) set(status int, body []byte) {
	f.mu.Lock()
	f.status, f.body = status, bytes.Clone(body)
	f.mu.Unlock()
}

// fakeIngest records what a Receiver asks of ingestion. Its CheckAd
// vouches for the ads of ads (CID → provider) and answers any other CID
// as a publisher answers 404; the tests with a real publisher and
// ingest.Ingester are in checkad_test.go.
type fakeIngest struct {
	mu        sync.Mutex
	resets    []cid.Cid
	announces []announce
	checked   []cid.Cid
	ads       map[cid.Cid]peer.ID
	err       error // returned by Announce
}

// ingest returns a fakeIngest that vouches for the fixture's FrozenAt:
// newer is A's ad, older B's.
func (f *handoffFixture) ingest() *fakeIngest {
	return &fakeIngest{ads: map[cid.Cid]peer.ID{f.newer: f.provA, f.older: f.provB}}
}

func (f *fakeIngest) CheckAd(_ context.Context, publisher peer.ID, _ []multiaddr.Multiaddr, c cid.Cid) (*schema.Advertisement, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = append(f.checked, c)
	prov, ok := f.ads[c]
	if !ok {
		return nil, fmt.Errorf("%w: %s of %s: %w", ingest.ErrFetch, c, publisher, ipnisync.ErrNotFound)
	}
	return &schema.Advertisement{Provider: prov.String()}, nil
}

type announce struct {
	publisher peer.ID
	addrs     []multiaddr.Multiaddr
	head      cid.Cid
}

func (f *fakeIngest) Reset(_ context.Context, _ peer.ID, lastHead cid.Cid) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets = append(f.resets, lastHead)
	return nil
}

func (f *fakeIngest) Announce(publisher peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.announces = append(f.announces, announce{publisher, addrs, head})
	return f.err
}

func (f *fakeIngest) calls() ([]cid.Cid, []announce) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cid.Cid(nil), f.resets...), append([]announce(nil), f.announces...)
}

// logBuffer is a slog logger writing text to a buffer, safe for
// concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// privatePool is the dial policy of a pool on this machine: the test's
// frozen indexers listen on 127.0.0.1, which the default policy refuses.
var privatePool = func() *netpolicy.Policy {
	p, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		panic(err)
	}
	return p
}()

// newReceiver is a Receiver that may GET frozen indexers on loopback.
func newReceiver(t testing.TB, st store.ProviderRecords, ing handoff.Ingest, ds datastore.Datastore, opts ...handoff.Option) *handoff.Receiver {
	t.Helper()
	reg, err := handoff.NewRegistry(ds)
	if err != nil {
		t.Fatal(err)
	}
	r, err := handoff.NewReceiver(st, ing, reg, append([]handoff.Option{handoff.WithDialPolicy(privatePool)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
