package piece

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/errkind"
)

// Defaults of a [Tracker].
const (
	// DefaultProvidersURL is the /providers endpoint of the public IPNI
	// instance, the usual value of [WithProvidersURL].
	DefaultProvidersURL = "https://cid.contact/providers"
	// DefaultPollInterval is how often the /providers endpoint is read,
	// and publishers given by configuration asked for their head.
	DefaultPollInterval = time.Minute
	// DefaultRequestRate is the most requests per second sent to one
	// publisher, on average (bursts of DefaultRequestBurst): the Tracker
	// gives its ingester ingest.WithRequestRate(DefaultRequestRate,
	// DefaultRequestBurst) before the options of [WithIngestOptions].
	DefaultRequestRate  = 10.0
	DefaultRequestBurst = 10
	// DefaultStatusInterval is how often the walkers' positions are copied
	// into the Store's statuses.
	DefaultStatusInterval = time.Second
	// MaxProvidersBody is the longest /providers answer read (cid.contact
	// answers a few megabytes).
	MaxProvidersBody = 256 << 20
	// DefaultEntryChunks is how many entry chunks of each advertisement
	// are read ([WithEntryChunks]): the first, as the piece-indexer design
	// has it ("it's enough to take the first entry and ignore the rest").
	DefaultEntryChunks = 1
	// DefaultWalkSlotTime and DefaultWalkSlotAds bound one publisher's
	// turn: after that many advertisements or that long its walk yields,
	// persisted where it is, and the publisher goes behind the others (the
	// Tracker gives its ingester ingest.WithSlot(DefaultWalkSlotTime,
	// DefaultWalkSlotAds) before the options of [WithIngestOptions]).
	DefaultWalkSlotTime = 10 * time.Second
	DefaultWalkSlotAds  = 64
	// DefaultClaimTTL is how long a Tracker's claim on a publisher's walk
	// lasts after its last step, in a Store that keeps walks ([Walks]):
	// another Tracker on the same Store takes the walk over that long
	// after the one walking it stopped ([WithClaimTTL]).
	DefaultClaimTTL = time.Minute
)

// ErrInvalidOption is wrapped by [NewTracker] and [NewHandler] given an
// argument or an option they cannot honour; the message names it.
var ErrInvalidOption = errkind.New(errkind.InvalidOption, "piece: invalid option")

// errUnsupported is wrapped for a publisher that has no HTTP address.
var errUnsupported = errors.New("unsupported protocol: no http or https address")

// TrackerOption configures a [Tracker].
type TrackerOption func(*trackerConfig) error

type trackerConfig struct {
	providersURL   string
	pollInterval   time.Duration
	publishers     []string
	statusInterval time.Duration
	logger         *slog.Logger
	client         *http.Client      // /providers
	policy         *netpolicy.Policy // publishers
	sampleSize     int
	entryChunks    int           // 0: all
	claimTTL       time.Duration // Walks claims
	owner          string        // "": kept in the datastore
	ingestOpts     []ingest.Option
	announceOpts   []announce.Option
}

func newTrackerConfig(opts []TrackerOption) (*trackerConfig, error) {
	c := &trackerConfig{
		pollInterval:   DefaultPollInterval,
		statusInterval: DefaultStatusInterval,
		entryChunks:    DefaultEntryChunks,
		claimTTL:       DefaultClaimTTL,
		logger:         slog.New(slog.DiscardHandler),
		client:         http.DefaultClient,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WithProvidersURL makes the Tracker learn providers, their publishers and
// their latest heads from the IPNI /providers endpoint at url (such as
// [DefaultProvidersURL]), read every poll interval. The default, "", reads
// none.
func WithProvidersURL(url string) TrackerOption {
	return func(c *trackerConfig) error { c.providersURL = url; return nil }
}

// WithPollInterval sets how often the /providers endpoint is read and the
// publishers given by [WithPublishers] are asked for their head (default
// [DefaultPollInterval]).
func WithPollInterval(d time.Duration) TrackerOption {
	return func(c *trackerConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: poll interval %v must be positive", ErrInvalidOption, d)
		}
		c.pollInterval = d
		return nil
	}
}

// WithPublishers adds publishers to walk whatever /providers says: each an
// http(s) base URL or a multiaddr (/dns/host/tcp/443/https, optionally with
// /http-path/ and /p2p/<id>). A publisher whose address does not name its
// peer ID is identified by the key that signs its head, fetched once.
func WithPublishers(addrs ...string) TrackerOption {
	return func(c *trackerConfig) error {
		for _, a := range addrs {
			if _, _, _, err := parsePublisher(a); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidOption, err)
			}
		}
		c.publishers = append(c.publishers, addrs...)
		return nil
	}
}

// WithStatusInterval sets how often walk positions and status texts are
// written to the Store (default [DefaultStatusInterval]). Counters are
// written as each advertisement is applied, whatever this says.
func WithStatusInterval(d time.Duration) TrackerOption {
	return func(c *trackerConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: status interval %v must be positive", ErrInvalidOption, d)
		}
		c.statusInterval = d
		return nil
	}
}

// WithTrackerLogger sends progress and failures to l (keys publisher, provider,
// cid). The default discards them.
func WithTrackerLogger(l *slog.Logger) TrackerOption {
	return func(c *trackerConfig) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// WithHTTPClient sets the client of the requests to the /providers
// endpoint of [WithProvidersURL] (default http.DefaultClient), which the
// operator chose. Requests to publishers, whose addresses come from
// /providers records and announces, go through the dial policy instead
// ([WithDialPolicy]). Timeouts come from ingest.WithRequestTimeout
// ([WithIngestOptions]), not from the client.
func WithHTTPClient(hc *http.Client) TrackerOption {
	return func(c *trackerConfig) error {
		if hc == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrInvalidOption)
		}
		c.client = hc
		return nil
	}
}

// WithDialPolicy sets where requests to publishers (heads and blocks, of
// publishers learnt from /providers, announces or [WithPublishers]) may
// connect: default nil, netpolicy's default policy, public addresses
// only, checked after name resolution. Publishers on a private network or
// on this machine need netpolicy.New(netpolicy.AllowPrivate()). Those
// requests follow no redirect. A refused publisher's walk fails, and its
// status says why.
func WithDialPolicy(p *netpolicy.Policy) TrackerOption {
	return func(c *trackerConfig) error { c.policy = p; return nil }
}

// WithIngestOptions configures the Tracker's ingester, which schedules,
// limits and retries the walks of publishers: ingest.WithWorkers (how many
// publishers are walked at once), ingest.WithRequestTimeout (every request
// to a publisher, the /providers poll and the head that identifies a
// publisher too), ingest.WithRequestRate, ingest.WithBackoff,
// ingest.WithUnsignedAds and the other ingest options, with the meanings
// and defaults the ingest package gives them, but for two defaults of the
// Tracker's own, given before these so that these win: a request rate of
// [DefaultRequestRate] with bursts of [DefaultRequestBurst] (a perSecond of
// 0 removes the limit), and a slot of [DefaultWalkSlotTime] and
// [DefaultWalkSlotAds] advertisements per turn (ingest.WithSlot). The
// ingester's logger is the Tracker's ([WithTrackerLogger]) unless one is
// given here. ingest.WithApplier, ingest.WithUnordered and
// ingest.WithHooks are the Tracker's own: NewTracker sets them after
// these, and those given here have no effect; walks are unordered, so
// ingest.WithCheckpoint has none either (the position moves after every
// advertisement).
func WithIngestOptions(opts ...ingest.Option) TrackerOption {
	return func(c *trackerConfig) error {
		c.ingestOpts = append(c.ingestOpts, opts...)
		return nil
	}
}

// WithAnnounceOptions configures the Tracker's announce receiver
// (PUT /announce), for example announce.WithSourceRate to limit the
// announces of each source: anyone can announce, and each announce of a
// new publisher costs a head request. The default is the receiver's.
func WithAnnounceOptions(opts ...announce.Option) TrackerOption {
	return func(c *trackerConfig) error {
		c.announceOpts = append(c.announceOpts, opts...)
		return nil
	}
}

// WithSampleSize sets how many payloads of each advertisement are offered
// to the Store: the k with the smallest [PayloadHash], which are all the
// Store can keep of them when k is at least its capacity. The default is
// the Store's Capacity() when it has that method, else [DefaultCapacity].
func WithSampleSize(k int) TrackerOption {
	return func(c *trackerConfig) error {
		if k < 1 {
			return fmt.Errorf("%w: sample size %d must be positive", ErrInvalidOption, k)
		}
		c.sampleSize = k
		return nil
	}
}

// WithEntryChunks sets how many entry chunks of each advertisement with a
// piece are read: the first n of its chain (or the first n nodes of a HAMT
// of entries), whose payloads are sampled; the chunks after them are never
// requested from the publisher. The default, [DefaultEntryChunks], reads
// the first chunk only, as the piece-indexer design does: one request per
// advertisement for its entries, however many it has, and a sample of the
// payloads the provider lists first. 0 reads every chunk: a uniform sample
// of all the advertisement's payloads, at one request per chunk (IPNI
// allows tens of thousands per advertisement).
func WithEntryChunks(n int) TrackerOption {
	return func(c *trackerConfig) error {
		if n < 0 {
			return fmt.Errorf("%w: entry chunks %d must not be negative", ErrInvalidOption, n)
		}
		c.entryChunks = n
		return nil
	}
}

// WithClaimTTL sets how long a Tracker's claim on a publisher's walk
// lasts after its last step, when the Store keeps walks ([Walks]): while
// it lasts, other Trackers on the Store leave the publisher alone (they
// ask again every slot time); once it expires, one of them takes the walk
// over where it stopped. Default [DefaultClaimTTL]. It should exceed the
// time of one step (an advertisement and its entry chunks, each bounded
// by ingest.WithRequestTimeout): a claim that lapses while its holder
// still walks costs requests, not exactness (steps are conditioned on the
// position).
func WithClaimTTL(d time.Duration) TrackerOption {
	return func(c *trackerConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: claim TTL %v must be positive", ErrInvalidOption, d)
		}
		c.claimTTL = d
		return nil
	}
}

// WithClaimOwner names the Tracker in its claims on publishers' walks,
// when the Store keeps walks ([Walks]); the Store's errors quote it. The
// default is a random name made once and kept in the Tracker's datastore,
// so that a Tracker restarted on its datastore takes its own claims back at
// once. Trackers sharing a Store need distinct names: two with the same
// name are not kept apart by claims, and only the conditional steps keep
// their counters exact (they then fetch each advertisement twice).
func WithClaimOwner(name string) TrackerOption {
	return func(c *trackerConfig) error {
		if name == "" {
			return fmt.Errorf("%w: empty claim owner", ErrInvalidOption)
		}
		c.owner = name
		return nil
	}
}
