package assigner

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Config is the pool and the assignment rules of a [State]. The zero value
// of each number is its default.
type Config struct {
	// Replication is the number of active (unfrozen) indexers each
	// publisher is assigned to: 0 means the default, 1. It is not capped
	// at the pool size: a publisher that cannot reach it stays waiting
	// ([ReasonNoCandidate]) with as many indexers as there are.
	Replication int

	// PresetReplication replaces Replication for a preset publisher (one
	// listed in some indexer's PresetPublishers): 0 means the default, 1.
	PresetReplication int

	// Indexers is the pool, in the order that breaks ties between equally
	// loaded candidates. IDs are unique and not empty.
	Indexers []IndexerConfig

	// Allow is the policy, evaluated on the publisher's peer ID: a
	// publisher it rejects is never assigned nor handed off. Nil allows
	// every publisher. [ExceptPolicy] builds the reference's
	// {Allow, Except} policy.
	Allow func(peer.ID) bool
}

// IndexerConfig is one indexer of the pool.
type IndexerConfig struct {
	// ID names the indexer in events and decisions: its admin URL, or any
	// name the caller maps to it. It is not the indexer's peer ID, which
	// the state learns from its status ([IndexerStatus.ID]).
	ID string

	// PresetPublishers are publishers preset to this indexer. A publisher
	// listed by one or more indexers is preset: it is assigned (and handed
	// off) only within the indexers listing it, PresetReplication of them,
	// and its assignments on indexers outside that list are ignored, as the
	// reference ignores them.
	PresetPublishers []peer.ID
}

// Defaults of [Config].
const (
	DefaultReplication       = 1
	DefaultPresetReplication = 1
)

// ExceptPolicy is the reference assigner's policy {Allow, Except} as an
// Allow function: with allow true every publisher is allowed but those in
// except (a deny list); with allow false only those in except are (an
// allow list).
func ExceptPolicy(allow bool, except ...peer.ID) func(peer.ID) bool {
	set := make(map[peer.ID]bool, len(except))
	for _, p := range except {
		set[p] = true
	}
	return func(p peer.ID) bool { return allow != set[p] }
}

// normalize validates c and returns it with defaults applied; the slices
// are copied.
func (c Config) normalize() (Config, error) {
	if c.Replication < 0 {
		return c, fmt.Errorf("%w: Replication %d is negative", ErrInvalidConfig, c.Replication)
	}
	if c.PresetReplication < 0 {
		return c, fmt.Errorf("%w: PresetReplication %d is negative", ErrInvalidConfig, c.PresetReplication)
	}
	if c.Replication == 0 {
		c.Replication = DefaultReplication
	}
	if c.PresetReplication == 0 {
		c.PresetReplication = DefaultPresetReplication
	}
	seen := make(map[string]bool, len(c.Indexers))
	ixs := make([]IndexerConfig, 0, len(c.Indexers))
	for i, ic := range c.Indexers {
		if err := ic.validate(); err != nil {
			return c, fmt.Errorf("%w: Indexers[%d]: %w", ErrInvalidConfig, i, err)
		}
		if seen[ic.ID] {
			return c, fmt.Errorf("%w: Indexers[%d]: duplicate ID %q", ErrInvalidConfig, i, ic.ID)
		}
		seen[ic.ID] = true
		ic.PresetPublishers = append([]peer.ID(nil), ic.PresetPublishers...)
		ixs = append(ixs, ic)
	}
	c.Indexers = ixs
	return c, nil
}

func (ic IndexerConfig) validate() error {
	if ic.ID == "" {
		return fmt.Errorf("empty ID")
	}
	for j, p := range ic.PresetPublishers {
		if p == "" {
			return fmt.Errorf("%q: PresetPublishers[%d] is empty", ic.ID, j)
		}
	}
	return nil
}
