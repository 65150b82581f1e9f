package handoff

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// Defaults, in one place.
const (
	// DefaultMaxBodySize bounds the frozen indexer's GET /providers answer
	// a [Receiver] reads: about 30,000 provider records of a kilobyte.
	DefaultMaxBodySize = 32 << 20
	// DefaultTimeout bounds each HTTP request of the default client of a
	// [Receiver] (GET /providers), so that a hung peer does not hang a
	// caller whose context has no deadline. [WithHTTPClient] replaces it.
	DefaultTimeout = time.Minute
)

// Option configures a [Receiver] ([NewReceiver]).
type Option func(*config) error

type config struct {
	hc      *http.Client // nil: the policy's client, built by newConfig
	policy  *netpolicy.Policy
	ownHC   bool // WithHTTPClient was given
	policyS bool // WithDialPolicy was given
	log     *slog.Logger
	frozen  func() bool
	allowed func(peer.ID) bool
	maxBody int64
	// frozenIndexers lists the canonical find URLs a handoff may name;
	// nil accepts any.
	frozenIndexers func(ctx context.Context) ([]string, error)
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		log:     slog.New(slog.DiscardHandler),
		frozen:  func() bool { return false },
		allowed: func(peer.ID) bool { return true },
		maxBody: DefaultMaxBodySize,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	switch {
	case c.ownHC && c.policyS:
		return nil, fmt.Errorf("%w: WithDialPolicy and WithHTTPClient: the caller's client dials, so the policy would be ignored (build it with netpolicy's Policy.Client)", ErrInvalidOption)
	case c.ownHC:
		// The caller's transport, but no redirect: a FrozenURL must not
		// send the receiver elsewhere.
		hc := *c.hc
		hc.CheckRedirect = netpolicy.RefuseRedirect
		c.hc = &hc
	default:
		c.hc = c.policy.Client()
		c.hc.Timeout = DefaultTimeout
	}
	return c, nil
}

// WithHTTPClient sets the client that GETs the frozen indexer's
// /providers (default: a client of the dial policy, [WithDialPolicy], with
// [DefaultTimeout]). Its transport decides which addresses may be
// dialled: build it with netpolicy unless every FrozenURL is trusted.
// Redirects are refused whatever its CheckRedirect says (the receiver
// uses a copy of hc with netpolicy.RefuseRedirect).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrInvalidOption)
		}
		c.hc, c.ownHC = hc, true
		return nil
	}
}

// WithDialPolicy sets the policy of the addresses the default client may
// connect to when it GETs a FrozenURL (default nil: netpolicy's default,
// public addresses only; checked after name resolution). The FrozenURL
// comes from whoever calls the admin API, so a pool whose indexers are on
// a private network or on one machine passes
// netpolicy.New(netpolicy.AllowPrivate()). A refused address fails the
// handoff with [ErrFrozenIndexer] wrapping netpolicy.ErrForbiddenAddress.
// It cannot be combined with [WithHTTPClient], whose transport dials.
func WithDialPolicy(p *netpolicy.Policy) Option {
	return func(c *config) error {
		c.policy, c.policyS = p, true
		return nil
	}
}

// WithLogger sets the logger (default: discard). Handoffs log at INFO,
// and at WARN what the caller should know though the handoff succeeded
// (no FrozenAt, disagreeing FrozenAt, a failed announce).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

// WithFrozen sets the function that tells whether this indexer is frozen
// (typically a freeze.Freezer's Frozen method, connected by the binary).
// A frozen receiver refuses handoffs and assignments with [ErrFrozen].
// Default: never frozen.
func WithFrozen(frozen func() bool) Option {
	return func(c *config) error {
		if frozen == nil {
			return fmt.Errorf("%w: nil frozen func", ErrInvalidOption)
		}
		c.frozen = frozen
		return nil
	}
}

// WithAllowed sets the policy: publishers for which allowed returns false
// are refused with [ErrNotAllowed] (the admin API's 403). Default: every
// publisher is allowed.
func WithAllowed(allowed func(publisher peer.ID) bool) Option {
	return func(c *config) error {
		if allowed == nil {
			return fmt.Errorf("%w: nil allowed func", ErrInvalidOption)
		}
		c.allowed = allowed
		return nil
	}
}

// WithMaxBodySize bounds the frozen indexer's GET /providers answer
// (default [DefaultMaxBodySize]); a larger one fails the handoff with
// [ErrTooLarge].
func WithMaxBodySize(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("%w: body size limit %d, want > 0", ErrInvalidOption, n)
		}
		c.maxBody = n
		return nil
	}
}

// WithFrozenIndexers restricts handoffs to the frozen indexers whose find
// API is at one of urls: a [Request] whose FrozenURL is none of them is
// refused with [ErrUnknownIndexer] before any request is made. URLs are
// compared after the FrozenURL rules ("http://" added when there is no
// scheme) with the scheme and host in lower case, a default port
// (:80, :443) and a trailing slash dropped; query and fragment are
// ignored. The FrozenID of the request is not checked: it is only
// recorded as the assignment's Continued, while the URL is what the
// receiver reads and trusts.
//
// Default: any FrozenURL is accepted, so whoever may call the admin API
// (the holder of its token) can make the receiver read any indexer's
// records. At least one URL is required; a URL that cannot be a find API
// is [ErrInvalidOption].
func WithFrozenIndexers(urls ...string) Option {
	return func(c *config) error {
		list, err := canonicalURLs(urls)
		if err != nil {
			return err
		}
		c.frozenIndexers = func(context.Context) ([]string, error) { return list, nil }
		return nil
	}
}

// WithFrozenIndexersFunc is [WithFrozenIndexers] with a list that can
// change while the receiver runs: list is called once per handoff, after
// the request is validated, and its URLs are compared as WithFrozenIndexers
// says (a URL that does not parse matches nothing). An error from list
// fails the handoff (nothing is changed). An indexer binary uses it to
// re-read a file that an operator updates when an indexer joins the pool.
func WithFrozenIndexersFunc(list func(ctx context.Context) ([]string, error)) Option {
	return func(c *config) error {
		if list == nil {
			return fmt.Errorf("%w: nil frozen indexers func", ErrInvalidOption)
		}
		c.frozenIndexers = list
		return nil
	}
}
