package assignernode

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/ingest/announce"
)

// Config is the typed configuration of an assigner. Start from
// [DefaultConfig] and set Service.Indexers.
type Config struct {
	// Service is the pool and its rules: the indexers, the replication,
	// the poll interval, the publisher policy and the gossip topic (see
	// assigner.ServiceConfig, which validates it).
	Service assigner.ServiceConfig
	// P2P is the libp2p listen multiaddr of the gossip host (announces on
	// Service.Topic, and republishing of HTTP announces); "" runs no
	// gossip. The host has a fresh identity each New.
	P2P string
	// P2PVerify fetches the signed heads of unknown publishers that
	// announce only libp2p addresses over libp2p (see
	// assigner.WithVerifyHost), so that they can be assigned: with the P2P
	// host if there is one, and otherwise with a host of its own that
	// listens nowhere (it only dials, under the same dial policy as the
	// HTTP head checks, AllowPrivateAddrs). Off, such publishers are never
	// assigned. On in DefaultConfig.
	P2PVerify bool
	// RequestTimeout bounds each request to an indexer.
	RequestTimeout time.Duration
	// AdminToken is the bearer token of the indexers' admin APIs; "":
	// none.
	AdminToken string
	// AllowPrivateAddrs lets the assigner fetch an unknown publisher's
	// signed head from loopback, private, link-local and CGNAT addresses
	// (a private pool; announces name those addresses, so off by
	// default). Cloud metadata addresses stay refused; the indexers' URLs
	// are configured and not restricted.
	AllowPrivateAddrs bool
	// ShutdownTimeout bounds how long requests in flight may take once
	// Run's context is done.
	ShutdownTimeout time.Duration
	// AnnounceRate limits HTTP announces to this many a second, more
	// answered 429: per publisher for a publisher the assigner knows
	// (assigned, held or preset; twice the rate at once), per source IP
	// for the others (ten times the rate at once: many publishers behind
	// one address). An announce of a publisher whose head is being
	// verified, or with an assign or handoff in flight, is only noted as
	// its newest and is not counted. 0: no limit.
	AnnounceRate float64
	// AnnounceRateExempt are the sources AnnounceRate does not limit.
	AnnounceRateExempt []netip.Prefix
	// GossipPeerRate is how many gossip announces a second are taken from
	// one propagating peer (twice that at once). 0: no limit. Like
	// Service.Topic, it applies to the gossip of P2P: without P2P there is
	// none to limit.
	GossipPeerRate float64
	// Logger receives the assigner's log; nil discards it.
	Logger *slog.Logger
	// Hooks observe announces, decisions, requests, forwards and polls
	// (for metrics).
	Hooks assigner.Hooks `json:"-"`
}

// DefaultConfig returns the defaults of the binary's flags: replication
// 1, the assigner package's poll interval, topic and request timeout, no
// gossip, head checks over HTTP and libp2p, public addresses only, the
// announce limits of the other roles and a 10s shutdown. Service.Indexers
// is empty.
func DefaultConfig() Config {
	return Config{
		Service: assigner.ServiceConfig{
			Replication:       1,
			PresetReplication: 1,
			PollInterval:      assigner.DefaultPollInterval,
			Topic:             assigner.DefaultTopic,
		},
		P2PVerify:       true,
		RequestTimeout:  assigner.DefaultRequestTimeout,
		ShutdownTimeout: 10 * time.Second,
		AnnounceRate:    cli.DefaultAnnounceRate,
		GossipPeerRate:  cli.DefaultGossipPeerRate,
	}
}

// validate returns an error naming the field of c at fault; the
// assigner's NewService checks Service.
func (c Config) validate() error {
	switch {
	case len(c.Service.Indexers) == 0:
		return errors.New("Service.Indexers: no indexer in the pool")
	case c.RequestTimeout <= 0:
		return fmt.Errorf("RequestTimeout %v must be positive", c.RequestTimeout)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	}
	return errors.Join(cli.CheckRate("AnnounceRate", c.AnnounceRate), cli.CheckRate("GossipPeerRate", c.GossipPeerRate))
}

// announceOptions are the announce limits of c as options of the
// assigner's Service, as an indexer node has them: the service tells the
// receiver which limit an announce falls under.
func (c Config) announceOptions() []assigner.ServiceOption {
	return []assigner.ServiceOption{
		assigner.WithReceiverOptions(
			announce.WithSourceRate(c.AnnounceRate, cli.NewPublisherBurst(c.AnnounceRate)),
			announce.WithPublisherRate(c.AnnounceRate, cli.RateBurst(c.AnnounceRate)),
			announce.WithSourceRateExempt(c.AnnounceRateExempt...)),
		assigner.WithGossipOptions(announce.WithPeerRate(c.GossipPeerRate, cli.RateBurst(c.GossipPeerRate))),
	}
}
