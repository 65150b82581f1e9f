package piecenode

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/crypto"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/httpserve"
	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/memory"
)

// Listeners are the HTTP listeners a piece sampler serves on; the caller
// binds them (a test passes net.Listen("tcp", "127.0.0.1:0")).
type Listeners struct {
	// API serves the signed REST API (GET /sample/..., GET
	// /ingestion-status/...) and the announces (PUT /announce, PUT
	// /ingest/announce). Required.
	API net.Listener
}

// Addrs is where a piece sampler listens.
type Addrs struct {
	// API is the REST API's "host:port".
	API string
}

// APIURL is the base URL of the REST API, http://<API>.
func (a Addrs) APIURL() string { return "http://" + a.API }

// Sampler is a piece sampler: it walks providers' advertisement chains,
// keeps a sample of payload CIDs per Filecoin piece and serves signed
// samples. Build it with [New], serve with [Sampler.Run], release with
// [Sampler.Close].
type Sampler struct {
	log             *slog.Logger
	ln              net.Listener
	tracker         *piece.Tracker
	api             *piece.Handler
	handler         http.Handler
	policy          *netpolicy.Policy
	owned           io.Closer // the in-memory store, nil with the caller's
	shutdownTimeout time.Duration

	started   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// New validates cfg and builds the sampler on lns.API: its store (unless
// cfg.Store), walker and API. It starts no goroutine. On error it has
// closed what it opened; the error names the field at fault.
func New(ctx context.Context, cfg Config, lns Listeners) (_ *Sampler, err error) {
	if lns.API == nil {
		return nil, errors.New("piecenode: Listeners.API is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("piecenode: config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sampler{log: log, ln: lns.API, shutdownTimeout: cfg.ShutdownTimeout}
	defer func() {
		if err != nil && s.owned != nil {
			s.owned.Close()
		}
	}()
	key := cfg.Key
	if key == nil {
		if key, _, err = crypto.GenerateEd25519Key(rand.Reader); err != nil {
			return nil, fmt.Errorf("piecenode: key: %w", err)
		}
	}
	st, ds := cfg.Store, cfg.WalkState
	if st == nil {
		m, err := memory.New(memory.WithCapacity(cfg.Capacity))
		if err != nil {
			return nil, fmt.Errorf("piecenode: Capacity: %w", err)
		}
		st, s.owned = m, m
	}
	if ds == nil {
		ds = dssync.MutexWrap(datastore.NewMapDatastore())
	}
	if s.policy, err = dialPolicy(cfg.AllowPrivateAddrs); err != nil {
		return nil, fmt.Errorf("piecenode: dial policy: %w", err)
	}
	topts := []piece.TrackerOption{
		piece.WithDialPolicy(s.policy),
		piece.WithProvidersURL(cfg.ProvidersURL),
		piece.WithPollInterval(cfg.PollInterval),
		piece.WithIngestOptions(
			ingest.WithWorkers(cfg.Concurrency),
			ingest.WithRequestTimeout(cfg.RequestTimeout),
			ingest.WithRequestRate(cfg.RequestRate, max(1, int(cfg.RequestRate))),
		),
		piece.WithTrackerLogger(log),
		piece.WithEntryChunks(cfg.EntryChunks),
		piece.WithAnnounceOptions(announce.WithSourceRate(cfg.AnnounceRate, netlimit.Burst(cfg.AnnounceRate)),
			announce.WithSourceRateExempt(cfg.AnnounceRateExempt...)),
	}
	if len(cfg.Publishers) > 0 {
		topts = append(topts, piece.WithPublishers(cfg.Publishers...))
	}
	if s.tracker, err = piece.NewTracker(st, ds, topts...); err != nil {
		return nil, fmt.Errorf("piecenode: %w", err)
	}
	if s.api, err = piece.NewHandler(st, key, piece.WithLogger(log)); err != nil {
		s.tracker.Close()
		return nil, fmt.Errorf("piecenode: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("PUT /announce", s.tracker.AnnounceHandler())
	mux.Handle("PUT /ingest/announce", s.tracker.AnnounceHandler())
	mux.Handle("/", s.api)
	s.handler = mux
	return s, nil
}

// Addrs reports where the sampler listens.
func (s *Sampler) Addrs() Addrs { return Addrs{API: s.ln.Addr().String()} }

// PubKey is the "pubkey" field of the API's answers: the public key a
// client verifies samples with (piece.VerifySample).
func (s *Sampler) PubKey() string { return s.api.PubKey() }

// DialPolicy is the policy the sampler dials publishers under.
func (s *Sampler) DialPolicy() *netpolicy.Policy { return s.policy }

// Run serves the API and walks the providers' chains until ctx is done,
// then shuts the API down (waiting at most Config.ShutdownTimeout for
// requests in flight) and stops the walks, which record their positions;
// it returns once every goroutine it started has exited, nil after a
// clean stop. Run may be called once.
func (s *Sampler) Run(ctx context.Context) error {
	if s.started.Swap(true) {
		return ErrRunTwice
	}
	eg, ctx := errgroup.WithContext(ctx)
	httpserve.Serve(ctx, eg, "api", httpserve.NewServer(s.handler, s.log), s.ln, s.shutdownTimeout)
	eg.Go(func() error { return s.tracker.Run(ctx) })
	return httpserve.WaitStopped(ctx, eg, s.log)
}

// Close releases what New opened: the walker, the in-memory store, and
// the listener if Run never ran. Call it after Run has returned. It is
// idempotent.
func (s *Sampler) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if !s.started.Swap(true) {
			if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		errs = append(errs, s.tracker.Close())
		if s.owned != nil {
			errs = append(errs, s.owned.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// dialPolicy is the policy the sampler dials publishers under: public
// addresses only, or with allowPrivate a private pool's too (cloud
// metadata stays refused).
func dialPolicy(allowPrivate bool) (*netpolicy.Policy, error) {
	if allowPrivate {
		return netpolicy.New(netpolicy.AllowPrivate())
	}
	return netpolicy.New()
}
