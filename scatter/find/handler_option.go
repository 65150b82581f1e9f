package find

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults of the find handler's options.
const (
	// DefaultBatchLimit is how many multihashes one POST /multihash may ask
	// for.
	DefaultBatchLimit = 1000
	// DefaultBodyLimit is the largest POST /multihash body, in bytes: room
	// for DefaultBatchLimit multihashes of 512 bytes each in base64.
	DefaultBodyLimit = 1 << 20
	// DefaultStreamWriteTimeout is how long an NDJSON answer may wait for
	// the client to take each line.
	DefaultStreamWriteTimeout = time.Minute
)

// HandlerOption configures a [Handler] ([NewHandler]). An option given an
// invalid value makes NewHandler fail with an error wrapping
// [ErrInvalidOption].
type HandlerOption func(*handlerConfig) error

type handlerConfig struct {
	log                *slog.Logger
	batchLimit         int
	bodyLimit          int64
	streamWriteTimeout time.Duration
	answerCache        int64
}

// WithLogger sets the logger of backend errors the handler could not
// report to the client (errors after an NDJSON stream started, and 500s).
// The default discards.
func WithLogger(l *slog.Logger) HandlerOption {
	return func(c *handlerConfig) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

// WithBatchLimit sets how many multihashes one POST /multihash may ask for
// (default [DefaultBatchLimit]); a larger request gets 413. n must be at
// least 1.
func WithBatchLimit(n int) HandlerOption {
	return func(c *handlerConfig) error {
		if n < 1 {
			return fmt.Errorf("%w: batch limit %d, want at least 1", ErrInvalidOption, n)
		}
		c.batchLimit = n
		return nil
	}
}

// WithBodyLimit sets the largest POST /multihash body in bytes (default
// [DefaultBodyLimit]); a larger one gets 413. n must be at least 1.
func WithBodyLimit(n int64) HandlerOption {
	return func(c *handlerConfig) error {
		if n < 1 {
			return fmt.Errorf("%w: body limit %d, want at least 1", ErrInvalidOption, n)
		}
		c.bodyLimit = n
		return nil
	}
}

// WithStreamWriteTimeout sets the write deadline of an NDJSON answer
// (default [DefaultStreamWriteTimeout]), which the handler moves to d from
// now before its first line and after each line it flushes: a stream lasts
// as long as the backend yields results, whatever the server's
// WriteTimeout, and a client that stops reading for d is cut. d must be
// positive. Servers whose ResponseWriter cannot set deadlines (httptest's
// recorder) do without it.
func WithStreamWriteTimeout(d time.Duration) HandlerOption {
	return func(c *handlerConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: stream write timeout %v, want a positive duration", ErrInvalidOption, d)
		}
		c.streamWriteTimeout = d
		return nil
	}
}

// WithAnswerCache sets the bytes spent on keeping JSON answers of single
// lookups ready (default [DefaultAnswerCache]); 0 keeps none. Answers are
// kept only over a [StoreBackend] whose store is [store.Versioned]
// (store/pebble and store/leveldb are), and served again only while no
// write that could change them has landed: exact, not a TTL. A kept
// answer skips parsing the key, reading the store and encoding. n must
// not be negative.
func WithAnswerCache(n int64) HandlerOption {
	return func(c *handlerConfig) error {
		if n < 0 {
			return fmt.Errorf("%w: answer cache of %d bytes, want 0 or more", ErrInvalidOption, n)
		}
		c.answerCache = n
		return nil
	}
}
