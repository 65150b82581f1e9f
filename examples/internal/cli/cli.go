package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/internal/netlimit"
)

// RunFunc is a program: it runs until ctx is done or it fails. args are the
// command-line arguments without the program name.
type RunFunc func(ctx context.Context, args []string, stderr io.Writer) error

// Main runs run with the process's arguments and stderr, under a context
// that SIGINT and SIGTERM cancel, and exits as ExitCode says.
func Main(name string, run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		os.Exit(ExitCode(name, err, os.Stderr))
	}
}

// ExitCode returns the exit code of a program that returned err: 0 for nil
// and for flag.ErrHelp (-h), else 1 after writing "name: err" to stderr.
func ExitCode(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
}

// ParseLevel parses a -log-level value: debug, info, warn or error (as
// slog.Level's UnmarshalText takes them, offsets such as "info+2" too).
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// NewLogger returns the text logger on stderr that logs at level and above.
func NewLogger(stderr io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// LogListening logs that the listener name is bound to addr, as
// msg=listening name=<name> addr=<addr>.
func LogListening(log *slog.Logger, name, addr string) {
	log.Info("listening", "name", name, "addr", addr)
}

// ErrTrailingData is the error of DecodeJSONOnly for data after the JSON
// value.
var ErrTrailingData = errors.New("data after the configuration object")

// DecodeJSON decodes the first JSON value of data into v. An object key
// that matches no field of v is an error; what follows the value is not
// read.
func DecodeJSON(data []byte, v any) error {
	_, err := decode(data, v)
	return err
}

// DecodeJSONOnly is DecodeJSON, except that anything but white space after
// the value is ErrTrailingData.
func DecodeJSONOnly(data []byte, v any) error {
	dec, err := decode(data, v)
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}

func decode(data []byte, v any) (*json.Decoder, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec, dec.Decode(v)
}

// FlagSet returns the flag set of a configuration: every flag bound to a
// field of *c with its current value as the default, and -config bound to
// *path. Usage and errors go to output.
type FlagSet[C any] func(c *C, path *string, output io.Writer) *flag.FlagSet

// LoadConfig returns the configuration args (without the program name)
// make: defaults(), then the -config file read with decode (DecodeJSON or
// DecodeJSONOnly), then the flags given explicitly on top of it. Flag
// errors and usage go to stderr; -h returns flag.ErrHelp. The caller
// validates the result.
func LoadConfig[C any](args []string, stderr io.Writer, defaults func() C, flags FlagSet[C], decode func([]byte, any) error) (C, error) {
	c := defaults()
	var path string
	fs := flags(&c, &path, stderr)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if path != "" {
		c = defaults()
		data, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("-config: %w", err)
		}
		if err := decode(data, &c); err != nil {
			return c, fmt.Errorf("-config %s: %w", path, err)
		}
		// The flags given explicitly override the file.
		if err := flags(&c, &path, io.Discard).Parse(args); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Connection caps of the listeners Listen makes, unless the -max-conns and
// -max-conns-per-ip flags of ConnLimitFlags say otherwise.
const (
	DefaultMaxConns      = netlimit.DefaultMaxConns
	DefaultMaxConnsPerIP = netlimit.DefaultMaxConnsPerIP
)

// Listen binds the TCP address addr with at most maxConns connections open
// at once (beyond it a new connection evicts the one whose exchange began
// the longest ago) and at most maxConnsPerIP from one source IP (IPv6: one
// /64; more are closed at once); 0 removes a cap. See internal/netlimit. The error is net.Listen's, which names the
// address and the cause (address already in use).
func Listen(addr string, maxConns, maxConnsPerIP int) (net.Listener, error) {
	if err := CheckConnLimits(maxConns, maxConnsPerIP); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l, err := netlimit.NewListener(ln, netlimit.WithMaxConns(maxConns), netlimit.WithMaxConnsPerIP(maxConnsPerIP))
	if err != nil {
		ln.Close()
		return nil, err
	}
	return l, nil
}

// ConnLimitFlags binds -max-conns and -max-conns-per-ip to *maxConns and
// *maxConnsPerIP, with their current values as defaults.
func ConnLimitFlags(fs *flag.FlagSet, maxConns, maxConnsPerIP *int) {
	fs.IntVar(maxConns, "max-conns", *maxConns, "connections open at once per listener; beyond it a new one evicts the connection whose exchange began the longest ago (0: no cap)")
	fs.IntVar(maxConnsPerIP, "max-conns-per-ip", *maxConnsPerIP, "connections open at once per listener from one source IP (IPv6: one /64); more are closed at once (0: no cap)")
}

// CheckConnLimits returns an error naming the flag if a cap of Listen is
// negative.
func CheckConnLimits(maxConns, maxConnsPerIP int) error {
	switch {
	case maxConns < 0:
		return fmt.Errorf("-max-conns %d must not be negative", maxConns)
	case maxConnsPerIP < 0:
		return fmt.Errorf("-max-conns-per-ip %d must not be negative", maxConnsPerIP)
	}
	return nil
}

// Announce limits of the roles that take announces (indexer, assigner),
// unless their -announce-rate, -announce-rate-exempt and -gossip-peer-rate
// flags say otherwise.
const (
	// DefaultAnnounceRate is the HTTP announces a second one source IP
	// may send, RateBurst of it at once.
	DefaultAnnounceRate = 10.0
	// DefaultAnnounceRateExempt are the sources never limited: none. A
	// pool on one host exempts loopback explicitly (a reverse proxy on
	// loopback would otherwise exempt everyone behind it).
	DefaultAnnounceRateExempt = ""
	// DefaultGossipPeerRate is the gossip announces a second delivered
	// from one propagating peer, RateBurst of it at once: a peer relays
	// every publisher's announces.
	DefaultGossipPeerRate = 100.0
)

// RateBurst is the burst of a rate limit of perSecond: two seconds' worth,
// at least 1.
func RateBurst(perSecond float64) int {
	return max(1, int(math.Ceil(2*perSecond)))
}

// NewPublisherBurst is how many announces of publishers not verified yet
// one source address may send at once under an announce rate of perSecond:
// ten seconds' worth, so that a provider starting many peer IDs behind one
// address, or many publishers behind a NAT, are taken in one burst. What
// they cost is bounded by the node's own shares (the ingester's fair
// shares, the assigner's check queue), not by this.
func NewPublisherBurst(perSecond float64) int {
	return max(1, int(math.Ceil(10*perSecond)))
}

// CheckRate returns an error naming flag if the rate v is negative, NaN or
// infinite (0 is no limit).
func CheckRate(flag string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 1) {
		return fmt.Errorf("%s %v: want 0 (no limit) or a positive rate", flag, v)
	}
	return nil
}

// ParsePrefixes parses a comma-separated list of CIDR prefixes
// ("10.0.0.0/8,::1/128"; a bare address is its /32 or /128). Blank
// elements are skipped.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Duration is a time.Duration that a JSON config file writes as a string
// such as "30s" (time.ParseDuration); a number is refused, naming the
// form wanted.
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes d as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a string such as "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"5m\" or \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
