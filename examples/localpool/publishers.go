package localpool

import (
	"context"
	"fmt"
	"strconv"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// PublishersName is the role name of the k-th set of honest publishers
// added by [Pool.AddPublishers] (k from 1): "publishers-<k>".
func PublishersName(k int) string { return RolePublishers + "-" + strconv.Itoa(k) }

// honest returns the names of the honest publisher roles in start order:
// RolePublishers, then those AddPublishers added. p.mu is held.
func (p *Pool) honest() []string {
	var out []string
	for _, name := range p.order {
		if r := p.roles[name]; r.kind == KindPublisher && r.publishers > 0 {
			out = append(out, name)
		}
	}
	return out
}

// AddPublishers starts n more honest publishers, as new publishers
// appearing in a running pool: one more publisher role (role
// [PublishersName](k) for the k-th call), with the configuration of role
// "publishers" but its own seed (Config.Seed+2000+k), so its identities
// and chains are new, announcing to the assigner, which assigns each to
// the least loaded indexer as it announces. They publish as Config says
// (Interval, Entries, MaxAds, ...), their data in Dir/<name>. Their URLs
// come after the others' in [URLs].Publishers (publisher-<i> numbering
// goes on), so [Pool.Truth], [Pool.Snapshot] and [Pool.WaitComplete]
// include them. It returns the new role's name once it has started.
func (p *Pool) AddPublishers(ctx context.Context, n int) (string, error) {
	if n < 1 {
		return "", fmt.Errorf("add publishers: %w: n %d, want at least 1", ErrConfig, n)
	}
	p.opMu.Lock()
	defer p.opMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", fmt.Errorf("add publishers: %w", ErrClosed)
	}
	k := len(p.honest())
	if p.roles[RolePublishers] == nil {
		k++ // no "publishers" role: still start numbering at 1
	}
	name := PublishersName(k)
	r := p.addRole(name, KindPublisher, k, publisherListeners(n)...)
	r.publishers, r.seed = n, p.cfg.Seed+2000+uint64(k)
	p.mu.Unlock()
	if err := p.startRole(ctx, r); err != nil {
		return name, fmt.Errorf("add publishers: %w", err)
	}
	return name, nil
}

// PublisherSpec returns the publishernode.Spec of publisher index of the
// publisher role name (RolePublishers, a [PublishersName] or a
// [MaliciousName]) with ads ads, from the very Config the role runs with:
// publishernode.NewPublisher(spec) regenerates that publisher's chain in
// the caller's process. A test uses it to list what a malicious publisher
// advertises (publishernode.Publisher.Advertised), which no indexer may
// answer.
func (p *Pool) PublisherSpec(name string, index, ads int) (publishernode.Spec, error) {
	p.mu.Lock()
	r := p.roles[name]
	if r == nil || r.kind != KindPublisher {
		p.mu.Unlock()
		return publishernode.Spec{}, fmt.Errorf("publisher spec %q: %w", name, ErrUnknownRole)
	}
	c := p.publisherConfig(r)
	p.mu.Unlock()
	if index < 0 || index >= c.Publishers {
		return publishernode.Spec{}, fmt.Errorf("publisher spec %s: index %d: the role runs %d publishers", name, index, c.Publishers)
	}
	return c.Spec(index, ads), nil
}

// PublisherTruth asks honest publisher index (publisher-<index>) for its
// GET /truth, without the entries: its head, ads and counts.
func (p *Pool) PublisherTruth(ctx context.Context, index int) (publishernode.Truth, error) {
	u := p.URLs().Publishers
	if index < 0 || index >= len(u) {
		return publishernode.Truth{}, fmt.Errorf("truth of publisher-%d: %w", index, ErrUnknownRole)
	}
	t, err := p.truth(ctx, u[index], false)
	if err != nil {
		return t, fmt.Errorf("truth of publisher-%d: %w", index, err)
	}
	return t, nil
}
