package piece

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/scatter/find"
)

// pollLoop reads /providers and asks configured publishers for their head,
// now and every poll interval.
func (t *Tracker) pollLoop(ctx context.Context) {
	if t.cfg.providersURL == "" && len(t.cfg.publishers) == 0 {
		return
	}
	resolved := make(map[string]peer.ID) // configured address → publisher
	tick := time.NewTicker(t.cfg.pollInterval)
	defer tick.Stop()
	for {
		if t.cfg.providersURL != "" {
			if n, err := t.Poll(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				t.log.Warn("reading providers failed", "url", t.cfg.providersURL, "error", err)
			} else {
				t.log.Debug("providers read", "url", t.cfg.providersURL, "providers", n)
			}
		}
		for _, s := range t.cfg.publishers {
			if err := t.walkConfigured(ctx, s, resolved); err != nil && ctx.Err() == nil {
				t.log.Warn("configured publisher not walked", "address", s, "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// walkConfigured queues a walk of the configured publisher s to its current
// head, identifying it first if its address does not name it.
func (t *Tracker) walkConfigured(ctx context.Context, s string, resolved map[string]peer.ID) error {
	id, a, u, err := parsePublisher(s)
	if err != nil {
		return err
	}
	if id == "" {
		id = resolved[s]
	}
	if id == "" {
		if id, err = t.identify(ctx, u); err != nil {
			return err
		}
		resolved[s] = id
		t.log.Info("publisher identified by its signed head", "publisher", id.String(), "address", u)
	}
	t.learnPublisher(id, u)
	return t.ing.Announce(id, []multiaddr.Multiaddr{a}, cid.Undef)
}

// identify fetches the signed head of the publisher at base and returns the
// peer whose key signed it (after checking the signature).
func (t *Tracker) identify(ctx context.Context, base string) (peer.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, t.requestTimeout)
	defer cancel()
	u := strings.TrimSuffix(base, "/") + ipnisync.IPNIPath + "/head"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := t.pubClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("identify publisher: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent:
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, ipnisync.ErrNoHead)
	default:
		return "", fmt.Errorf("identify publisher: GET %s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, err)
	}
	h, err := ipnisync.DecodeSignedHead(body)
	if err != nil {
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, err)
	}
	id, err := h.Signer()
	if err == nil {
		err = h.Verify(id)
	}
	if err != nil {
		return "", fmt.Errorf("identify publisher: GET %s: %w", u, err)
	}
	return id, nil
}

// Poll reads the /providers endpoint once and queues a walk of every HTTP
// publisher whose head changed; it returns how many providers it read.
// Elements that do not decode are skipped and logged. [Tracker.Run] calls
// it every poll interval; it is exported for an admin "poll now".
func (t *Tracker) Poll(ctx context.Context) (int, error) {
	if t.cfg.providersURL == "" {
		return 0, fmt.Errorf("piece: poll: %w: no providers URL", ErrInvalidOption)
	}
	ctx, cancel := context.WithTimeout(ctx, max(t.requestTimeout, 30*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.cfg.providersURL, nil)
	if err != nil {
		return 0, fmt.Errorf("piece: poll: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.cfg.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("piece: poll: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("piece: poll: GET %s: status %d", t.cfg.providersURL, resp.StatusCode)
	}
	// The whole answer is read before any record is tracked: one that
	// breaks off tracks nothing.
	var raw []json.RawMessage
	for r, err := range find.ProviderRecords(io.LimitReader(resp.Body, MaxProvidersBody)) {
		if err != nil {
			return 0, fmt.Errorf("piece: poll: GET %s: %w", t.cfg.providersURL, err)
		}
		raw = append(raw, r)
	}
	n := 0
	for _, r := range raw {
		var pi find.ProviderInfo
		if err := json.Unmarshal(r, &pi); err != nil || pi.AddrInfo.ID == "" {
			t.log.Debug("skipping a provider that does not decode", "error", err)
			continue
		}
		n++
		t.track(ctx, &pi)
	}
	return n, nil
}

// track handles one /providers element.
func (t *Tracker) track(ctx context.Context, pi *find.ProviderInfo) {
	prov := pi.AddrInfo.ID
	pub := pi.AddrInfo
	if pi.Publisher != nil && pi.Publisher.ID != "" {
		pub = *pi.Publisher
	}
	h, u := httpAddrs(pub.Addrs)
	if len(h) == 0 {
		t.markUnsupported(ctx, pub.ID, []peer.ID{prov}, pub.Addrs)
		return
	}
	t.learnPublisher(pub.ID, u)
	t.learnProvider(pub.ID, prov)
	t.mu.Lock()
	last, seen := t.announced[pub.ID]
	if seen && last.Equals(pi.LastAdvertisement) {
		t.mu.Unlock()
		return
	}
	t.announced[pub.ID] = pi.LastAdvertisement
	t.mu.Unlock()
	if err := t.ing.Announce(pub.ID, h, pi.LastAdvertisement); err != nil {
		t.log.Warn("provider not walked", "provider", prov.String(), "publisher", pub.ID.String(), "error", err)
	}
}

// markUnsupported writes the "unsupported protocol" status of the providers
// of a publisher that has no HTTP address (the publisher itself when none
// is known).
func (t *Tracker) markUnsupported(ctx context.Context, pub peer.ID, provs []peer.ID, addrs []multiaddr.Multiaddr) {
	if len(provs) == 0 {
		provs = t.providersOf(pub)
	}
	ss := make([]string, len(addrs))
	for i, a := range addrs {
		ss[i] = a.String()
	}
	w := writtenStatus{
		address: strings.Join(ss, " "),
		text:    fmt.Sprintf("unsupported protocol: publisher %s has no http or https address (%s)", pub, strings.Join(ss, ", ")),
	}
	for _, p := range provs {
		t.write(ctx, p, w, false)
	}
}
