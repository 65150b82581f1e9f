package assignernode

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/netlimit"
)

// Config is the typed configuration of an assigner. Start from
// [DefaultConfig] and set Service.Indexers. A Config round-trips through
// encoding/json (durations in nanoseconds, peer IDs and prefixes as text)
// except Logger and Hooks, which are not encoded.
type Config struct {
	// Service is the pool and its rules: the indexers, the replication,
	// the poll interval, the publisher policy and the gossip topic.
	Service ServiceConfig
	// RequestTimeout bounds each request to an indexer.
	RequestTimeout time.Duration
	// AdminToken is the bearer token of the indexers' admin APIs; "":
	// none.
	AdminToken string
	// AllowPrivateAddrs lets the assigner fetch an unknown publisher's
	// signed head from loopback, private, link-local and CGNAT addresses
	// (a private pool; announces name those addresses, so off by
	// default). Cloud metadata addresses stay refused; the indexers' URLs
	// are configured and not restricted. See [Config.DialPolicy].
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
	// Service.Topic, it applies to the gossip of Listeners.P2P: without
	// it there is none to limit.
	GossipPeerRate float64
	// Logger receives the assigner's log; nil discards it.
	Logger *slog.Logger `json:"-"`
	// Hooks observe announces, decisions, requests, forwards and polls
	// (for metrics).
	Hooks assigner.Hooks `json:"-"`
}

// ServiceConfig is the pool and its rules: assigner.ServiceConfig, with
// the publisher policy as data.
type ServiceConfig struct {
	// Indexers is the pool, in the order that breaks ties.
	Indexers []assigner.ServiceIndexer
	// Replication and PresetReplication are the indexers per publisher
	// and per preset publisher (0: 1).
	Replication, PresetReplication int
	// PollInterval is the period of the status polls.
	PollInterval time.Duration
	// Policy decides which publishers may be assigned; a publisher it
	// rejects is answered 403. Nil allows every publisher.
	Policy *Policy `json:",omitempty"`
	// Topic is the gossip topic of announces, /indexer/ingest/<network>.
	Topic string
}

// Policy is the reference's publisher policy {Allow, Except}: with Allow,
// every publisher but those of Except; without, only those of Except.
type Policy struct {
	Allow  bool
	Except []peer.ID
}

// DefaultConfig returns the defaults of the binary's flags: replication
// 1, the assigner package's poll interval, topic and request timeout,
// every publisher allowed, public addresses only, the announce limits of
// the other roles and a 10s shutdown. Service.Indexers is empty. Gossip
// and head checks over libp2p depend on the hosts in [Listeners].
func DefaultConfig() Config {
	return Config{
		Service: ServiceConfig{
			Replication:       1,
			PresetReplication: 1,
			PollInterval:      assigner.DefaultPollInterval,
			Topic:             assigner.DefaultTopic,
		},
		RequestTimeout:  assigner.DefaultRequestTimeout,
		ShutdownTimeout: 10 * time.Second,
		AnnounceRate:    netlimit.DefaultAnnounceRate,
		GossipPeerRate:  netlimit.DefaultGossipPeerRate,
	}
}

// Validate returns an error naming the field of c at fault, the one [New]
// returns for it; the service's rules (URLs, replication, topic) are
// checked as assigner.NewService checks them.
func (c Config) Validate() error {
	switch {
	case len(c.Service.Indexers) == 0:
		return errors.New("Service.Indexers: no indexer in the pool")
	case c.RequestTimeout <= 0:
		return fmt.Errorf("RequestTimeout %v must be positive", c.RequestTimeout)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	case c.Service.PollInterval < 0:
		return fmt.Errorf("Service.PollInterval %v must not be negative", c.Service.PollInterval)
	}
	if err := errors.Join(netlimit.CheckRate("AnnounceRate", c.AnnounceRate), netlimit.CheckRate("GossipPeerRate", c.GossipPeerRate)); err != nil {
		return err
	}
	if _, err := assigner.NewService(c.Service.serviceConfig()); err != nil {
		return fmt.Errorf("Service: %w", err)
	}
	return nil
}

// DialPolicy is the policy the assigner fetches unknown publishers' heads
// under: public addresses only or, with AllowPrivateAddrs, a private
// pool's too. The libp2p hosts of [Listeners] must dial through
// ipnisync.NewGater of it.
func (c Config) DialPolicy() (*netpolicy.Policy, error) {
	if c.AllowPrivateAddrs {
		return netpolicy.New(netpolicy.AllowPrivate())
	}
	return netpolicy.New()
}

// serviceConfig is s as the assigner's ServiceConfig.
func (s ServiceConfig) serviceConfig() assigner.ServiceConfig {
	sc := assigner.ServiceConfig{
		Indexers: s.Indexers, Replication: s.Replication, PresetReplication: s.PresetReplication,
		PollInterval: s.PollInterval, Topic: s.Topic,
	}
	if s.Policy != nil {
		sc.Policy = assigner.ExceptPolicy(s.Policy.Allow, s.Policy.Except...)
	}
	return sc
}

// announceOptions are the announce limits of c as options of the
// assigner's Service, as an indexer node has them: the service tells the
// receiver which limit an announce falls under.
func (c Config) announceOptions() []assigner.ServiceOption {
	return []assigner.ServiceOption{
		assigner.WithReceiverOptions(
			announce.WithSourceRate(c.AnnounceRate, netlimit.NewPublisherBurst(c.AnnounceRate)),
			announce.WithPublisherRate(c.AnnounceRate, netlimit.Burst(c.AnnounceRate)),
			announce.WithSourceRateExempt(c.AnnounceRateExempt...)),
		assigner.WithGossipOptions(announce.WithPeerRate(c.GossipPeerRate, netlimit.Burst(c.GossipPeerRate))),
	}
}
