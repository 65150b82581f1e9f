package routing

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/indexkit/indexkit/scatter/find"
)

// Defaults of the handler's options.
const (
	// DefaultMaxAge is the max-age of a complete answer that has
	// providers: five minutes, the spec's example and indexstar's default.
	DefaultMaxAge = 5 * time.Minute
	// DefaultNotFoundMaxAge is the max-age of a complete answer with no
	// provider: 15 seconds, the spec's example, so that content indexed
	// a moment later is not hidden for long.
	DefaultNotFoundMaxAge = 15 * time.Second
	// DefaultJSONLimit is how many providers a JSON answer holds at most,
	// as the spec recommends; a stream has no limit.
	DefaultJSONLimit = 100
	// DefaultStreamWriteTimeout is how long an NDJSON answer may wait for
	// the client to take each line, as in the find API.
	DefaultStreamWriteTimeout = find.DefaultStreamWriteTimeout
)

// Option configures a [Handler] ([New]). An option given an invalid value
// makes New fail with an error wrapping [ErrInvalidOption].
type Option func(*config) error

type config struct {
	log                *slog.Logger
	maxAge, notFound   time.Duration
	jsonLimit          int
	streamWriteTimeout time.Duration
}

// WithLogger sets the logger of backend errors the handler could not
// report to the client (errors after a stream started, and 500s). The
// default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

// WithMaxAge sets the max-age, in whole seconds, of complete answers:
// found for those with providers (default [DefaultMaxAge]), notFound for
// those with none (default [DefaultNotFoundMaxAge]). found must be at
// least a second and notFound zero or more; zero makes a "not found"
// uncacheable (no-cache).
func WithMaxAge(found, notFound time.Duration) Option {
	return func(c *config) error {
		if found < time.Second || notFound < 0 {
			return fmt.Errorf("%w: max-age %v and %v, want at least 1s and zero or more", ErrInvalidOption, found, notFound)
		}
		c.maxAge, c.notFound = found, notFound
		return nil
	}
}

// WithJSONLimit sets how many providers a JSON answer holds at most
// (default [DefaultJSONLimit]); the others are left out, as the spec
// allows. n must be at least 1.
func WithJSONLimit(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: JSON limit %d, want at least 1", ErrInvalidOption, n)
		}
		c.jsonLimit = n
		return nil
	}
}

// WithStreamWriteTimeout sets the write deadline of an NDJSON answer
// (default [DefaultStreamWriteTimeout]), moved to d from now before each
// line, as the find API does. d must be positive.
func WithStreamWriteTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: stream write timeout %v, want a positive duration", ErrInvalidOption, d)
		}
		c.streamWriteTimeout = d
		return nil
	}
}
