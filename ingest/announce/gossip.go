package announce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"golang.org/x/crypto/blake2b"

	"github.com/indexkit/indexkit/internal/netlimit"
)

// DefaultNetwork is the network of the production IPNI gossip topic.
const DefaultNetwork = "mainnet"

// TopicPrefix is the part of the gossip topic name before the network.
const TopicPrefix = "/indexer/ingest/"

// GossipOption configures a [Gossip].
type GossipOption func(*gossipConfig) error

type gossipConfig struct {
	network   string
	republish bool
	logger    *slog.Logger
	psOpts    []pubsub.Option

	peerRate  float64 // announces a second per propagating peer; 0: no limit
	peerBurst int
}

// WithNetwork sets the network: the topic is /indexer/ingest/<network>.
// Default [DefaultNetwork].
func WithNetwork(network string) GossipOption {
	return func(c *gossipConfig) error {
		if network == "" {
			return fmt.Errorf("%w: empty network", ErrInvalidOption)
		}
		c.network = network
		return nil
	}
}

// WithRepublish sets whether announces the [Receiver] gets over HTTP are
// republished on the topic, with OrigPeer set to their publisher, so that
// the other indexers of the network see them too. On by default.
func WithRepublish(on bool) GossipOption {
	return func(c *gossipConfig) error {
		c.republish = on
		return nil
	}
}

// WithGossipLogger sets the logger; the default discards.
func WithGossipLogger(l *slog.Logger) GossipOption {
	return func(c *gossipConfig) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// WithPeerRate limits the announces delivered from each propagating peer
// (the mesh peer that forwarded the message to this host, not its signer)
// to perSecond a second on average and burst at once; the others are
// dropped before they are decoded and counted in [GossipStats].RateLimited.
// GossipSub has already validated and forwarded them: the limit protects
// this node's Receiver, not the network. The peers are remembered in a
// table of [DefaultMaxSources] entries, the least recently seen forgotten
// first. A peer relays every publisher's announces, so set the rate well
// above one publisher's. perSecond 0 removes the limit (the default);
// otherwise burst must be 1 or more.
func WithPeerRate(perSecond float64, burst int) GossipOption {
	return func(c *gossipConfig) error {
		if perSecond < 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) || (perSecond > 0 && burst < 1) {
			return fmt.Errorf("%w: peer rate %v a second, burst %d", ErrInvalidOption, perSecond, burst)
		}
		c.peerRate, c.peerBurst = perSecond, burst
		return nil
	}
}

// WithPubSubOptions appends options to those the GossipSub router is made
// with (after the defaults, so they win).
func WithPubSubOptions(opts ...pubsub.Option) GossipOption {
	return func(c *gossipConfig) error {
		c.psOpts = append(c.psOpts, opts...)
		return nil
	}
}

// GossipStats is a snapshot of a [Gossip]'s counters.
type GossipStats struct {
	Received  uint64 // messages read from the topic
	Malformed uint64 // messages that did not decode
	Self      uint64 // own republishes, ignored
	Published uint64 // messages published (Send and republish)
	// RateLimited counts messages dropped because their propagating peer
	// was over its rate (WithPeerRate).
	RateLimited uint64
}

// Gossip joins the announce topic /indexer/ingest/<network> with
// GossipSub on a caller's libp2p host. While [Gossip.Run] runs it hands the
// announces it reads to a [Receiver], republishes the Receiver's HTTP
// announces, and publishes with [Gossip.Send]: it is the gossip [Sender].
type Gossip struct {
	host  host.Host
	recv  *Receiver
	cfg   gossipConfig
	topic string

	mu      sync.Mutex
	running bool
	live    *pubsub.Topic // non-nil while joined
	ready   chan struct{}

	rate *netlimit.Rate // nil without WithPeerRate

	received, malformedN, self, published, rateLimited atomic.Uint64
}

// NewGossip returns a Gossip on h. recv may be nil for a publisher that only
// sends; otherwise received announces go to recv and, unless
// WithRepublish(false), recv's HTTP announces are republished through this
// Gossip (a Receiver republishes through one Gossip at most). It starts
// nothing; call Run.
func NewGossip(h host.Host, recv *Receiver, opts ...GossipOption) (*Gossip, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil host", ErrInvalidOption)
	}
	cfg := gossipConfig{network: DefaultNetwork, republish: true, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	g := &Gossip{host: h, recv: recv, cfg: cfg, topic: TopicPrefix + cfg.network, ready: make(chan struct{})}
	if cfg.peerRate > 0 {
		var err error
		if g.rate, err = netlimit.NewRate(cfg.peerRate, cfg.peerBurst, netlimit.WithMaxKeys(DefaultMaxSources)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
	}
	if recv != nil && cfg.republish {
		if err := recv.setRepublisher(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Topic returns the topic name, e.g. /indexer/ingest/mainnet.
func (g *Gossip) Topic() string { return g.topic }

// Ready is closed once Run has joined the topic.
func (g *Gossip) Ready() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ready
}

// Peers returns the peers known to be subscribed to the topic.
func (g *Gossip) Peers() []peer.ID {
	g.mu.Lock()
	t := g.live
	g.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.ListPeers()
}

// Stats returns a snapshot of the counters.
func (g *Gossip) Stats() GossipStats {
	return GossipStats{
		Received:    g.received.Load(),
		Malformed:   g.malformedN.Load(),
		Self:        g.self.Load(),
		Published:   g.published.Load(),
		RateLimited: g.rateLimited.Load(),
	}
}

// messageID is go-libipni's: blake2b-256 of the data, so that the same
// announce from two republishers is one message, and IHAVE/IWANT ids agree
// with reference peers.
func messageID(m *pb.Message) string {
	sum := blake2b.Sum256(m.Data)
	return string(sum[:])
}

// Run starts GossipSub on the host (go-libipni's settings: peer exchange,
// flood publish, blake2b message IDs), joins and subscribes to the topic,
// and delivers announces until ctx ends. It returns nil after ctx ends, once
// its own goroutines have exited (GossipSub's internal goroutines stop
// with ctx; their stream handlers stay registered on the host until it
// closes). A Gossip runs once at a time: a concurrent Run returns
// [ErrRunTwice]; Run may be called again after it returns.
func (g *Gossip) Run(ctx context.Context) error {
	g.mu.Lock()
	if g.running {
		g.mu.Unlock()
		return ErrRunTwice
	}
	g.running = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running = false
		g.live = nil
		g.ready = make(chan struct{})
		g.mu.Unlock()
	}()

	psCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := append([]pubsub.Option{
		pubsub.WithPeerExchange(true),
		pubsub.WithFloodPublish(true),
		pubsub.WithMessageIdFn(messageID),
		pubsub.WithDirectConnectTicks(30),
	}, g.cfg.psOpts...)
	ps, err := pubsub.NewGossipSub(psCtx, g.host, opts...)
	if err != nil {
		return fmt.Errorf("announce: start gossipsub: %w", err)
	}
	topic, err := ps.Join(g.topic)
	if err != nil {
		return fmt.Errorf("announce: join %s: %w", g.topic, err)
	}
	defer topic.Close()
	sub, err := topic.Subscribe()
	if err != nil {
		return fmt.Errorf("announce: subscribe to %s: %w", g.topic, err)
	}
	defer sub.Cancel()

	g.mu.Lock()
	g.live = topic
	close(g.ready)
	g.mu.Unlock()
	g.cfg.logger.Info("joined announce topic", "topic", g.topic)

	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				g.mu.Lock()
				g.live = nil // no Send from here on
				g.mu.Unlock()
				return nil
			}
			return fmt.Errorf("announce: read %s: %w", g.topic, err)
		}
		g.handle(ctx, msg)
	}
}

func (g *Gossip) handle(ctx context.Context, msg *pubsub.Message) {
	g.received.Add(1)
	if g.rate != nil && msg.ReceivedFrom != g.host.ID() {
		if ok, _ := g.rate.Allow(string(msg.ReceivedFrom)); !ok {
			g.rateLimited.Add(1)
			return
		}
	}
	from, err := peer.IDFromBytes(msg.From)
	if err != nil {
		g.malformedN.Add(1)
		return
	}
	m, err := DecodeCBOR(msg.Data)
	if err != nil {
		g.malformedN.Add(1)
		g.cfg.logger.Debug("cannot decode gossip announce", "relay", from, "err", err)
		return
	}
	publisher := from
	if m.OrigPeer != "" {
		if from == g.host.ID() {
			g.self.Add(1)
			return
		}
		publisher = m.OrigPeer
	}
	if g.recv == nil {
		return
	}
	err = g.recv.deliver(ctx, Announce{
		Cid:       m.Cid,
		Publisher: publisher,
		Addrs:     stripP2P(m.Addrs, publisher),
		ExtraData: m.ExtraData,
		Source:    SourceGossip,
		Relay:     from,
	})
	if err != nil && !errors.Is(err, errDuplicate) {
		g.cfg.logger.Debug("gossip announce not delivered", "publisher", publisher, "cid", m.Cid, "err", err)
	}
}

// stripP2P removes a trailing /p2p/<publisher> from each address; addresses
// that are only that are dropped.
func stripP2P(addrs []multiaddr.Multiaddr, publisher peer.ID) []multiaddr.Multiaddr {
	if len(addrs) == 0 {
		return nil
	}
	out := make([]multiaddr.Multiaddr, 0, len(addrs))
	for _, a := range addrs {
		t, id := peer.SplitAddr(a)
		if id == publisher {
			a = t
		}
		if len(a) > 0 {
			out = append(out, a)
		}
	}
	return out
}

// Send publishes m on the topic, signed by the host. It fails with
// [ErrNotRunning] unless Run has joined the topic, and with
// [ErrInvalidMessage] for a message that does not encode.
func (g *Gossip) Send(ctx context.Context, m Message) error {
	data, err := m.EncodeCBOR()
	if err != nil {
		return err
	}
	g.mu.Lock()
	t := g.live
	g.mu.Unlock()
	if t == nil {
		return ErrNotRunning
	}
	if err := t.Publish(ctx, data); err != nil {
		return fmt.Errorf("announce: publish on %s: %w", g.topic, err)
	}
	g.published.Add(1)
	return nil
}

// republish puts an HTTP announce on the topic as go-libipni does: the
// publisher's addresses without /p2p/, no ExtraData, OrigPeer = publisher.
func (g *Gossip) republish(ctx context.Context, a Announce) error {
	return g.Send(ctx, Message{Cid: a.Cid, Addrs: a.Addrs, OrigPeer: a.Publisher})
}
