package scale

// The publishers: on-demand chains served over HTTP with ipnisync.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
)

// publisher is one chain served over HTTP on 127.0.0.1.
type publisher struct {
	chain *chaingen.OnDemand
	pub   *ipnisync.Publisher
	srv   *http.Server
	ln    net.Listener
	addr  multiaddr.Multiaddr // /ip4/127.0.0.1/tcp/<port>/http
}

// chainConfig is the chaingen configuration of publisher i.
func (c Config) chainConfig(i int) chaingen.Config {
	cc := chaingen.Config{
		Seed: c.Seed + uint64(i), Ads: c.adsPerPublisher(),
		MhsPerAd: c.MhsPerAd, ChunkSize: c.ChunkSize,
	}
	if c.MinMhsPerAd < c.MhsPerAd {
		cc.MinMhsPerAd = c.MinMhsPerAd
	}
	if c.DagCBOR {
		cc.Codec = schema.DagCBOR
	}
	return cc
}

// startPublishers generates the chains, in parallel, and serves each on
// its own listener. The caller stops them with stopPublishers.
func startPublishers(ctx context.Context, c Config, log *slog.Logger) ([]*publisher, error) {
	pubs := make([]*publisher, c.Publishers)
	start := time.Now()
	eg, ctx := errgroup.WithContext(ctx)
	for i := range pubs {
		eg.Go(func() error {
			ch, err := chaingen.NewOnDemand(ctx, c.chainConfig(i))
			if err != nil {
				return err
			}
			src := ipnisync.BlockSourceFunc(func(ctx context.Context, id cid.Cid) ([]byte, error) {
				b, err := ch.Block(ctx, id)
				if errors.Is(err, chaingen.ErrNotFound) {
					return nil, fmt.Errorf("%w: %w", ipnisync.ErrNotFound, err)
				}
				return b, err
			})
			pub, err := ipnisync.NewPublisher(ch.PublisherKey, src)
			if err != nil {
				return err
			}
			if err := pub.SetHead(ctx, ch.Head()); err != nil {
				return err
			}
			pubs[i] = &publisher{chain: ch, pub: pub}
			return nil
		})
	}
	// Generation takes minutes at 100M: say that it goes on.
	generated := make(chan struct{})
	var ticker sync.WaitGroup
	ticker.Go(func() {
		t := time.NewTicker(c.Status)
		defer t.Stop()
		last := start
		for {
			select {
			case <-generated:
				return
			case now := <-t.C:
				if now.Sub(last) < c.Status*9/10 { // a tick that waited for the CPU
					continue
				}
				last = now
				log.Info("generating the chains", "publishers", len(pubs), "ads_each", c.adsPerPublisher(),
					"elapsed", time.Since(start).Round(time.Second))
			}
		}
	})
	err := eg.Wait()
	close(generated)
	ticker.Wait()
	if err != nil {
		return nil, fmt.Errorf("generating the chains: %w", err)
	}
	var mhs uint64
	var blocks int
	for _, p := range pubs {
		mhs += p.chain.Multihashes()
		blocks += p.chain.Blocks()
	}
	log.Info("chains generated", "publishers", len(pubs), "multihashes", mhs, "blocks", blocks,
		"took", time.Since(start).Round(time.Millisecond))

	for i, p := range pubs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			stopPublishers(pubs[:i])
			return nil, fmt.Errorf("publisher %d: %w", i, err)
		}
		p.ln = ln
		if p.addr, err = manet.FromNetAddr(ln.Addr()); err != nil {
			ln.Close()
			stopPublishers(pubs[:i])
			return nil, err
		}
		p.addr = p.addr.Encapsulate(multiaddr.StringCast("/http"))
		p.srv = &http.Server{Handler: p.pub, ReadHeaderTimeout: 10 * time.Second}
		go p.srv.Serve(ln) //nolint:errcheck // ErrServerClosed at stop
	}
	return pubs, nil
}

// stopPublishers closes the servers at once.
func stopPublishers(pubs []*publisher) {
	for _, p := range pubs {
		if p != nil && p.srv != nil {
			p.srv.Close()
		}
	}
}

// announceAll tells the node at ingestURL of each publisher's head over
// HTTP, as a publisher announces.
func announceAll(ctx context.Context, pubs []*publisher, ingestURL string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(pubs))
	for i, p := range pubs {
		wg.Go(func() {
			s, err := announce.NewHTTPSender([]string{ingestURL}, p.pub.ID())
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			errs[i] = s.Send(ctx, announce.Message{Cid: p.chain.Head(), Addrs: []multiaddr.Multiaddr{p.addr}})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
