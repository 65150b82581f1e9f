package cli

import (
	"log/slog"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// DialPolicy is the dial policy of a role's clients that dial addresses
// others name: public addresses only or, with allowPrivate (the role's
// -allow-private-addrs), a private pool's, which it logs as a WARN naming
// what the role dials (dials, e.g. "publishers and frozen indexers").
func DialPolicy(allowPrivate bool, log *slog.Logger, dials string) (*netpolicy.Policy, error) {
	if !allowPrivate {
		return netpolicy.New()
	}
	WarnPrivateAddrs(log, dials)
	return netpolicy.New(netpolicy.AllowPrivate())
}

// WarnPrivateAddrs logs the WARN of a role started with
// -allow-private-addrs, naming what it dials (dials): DialPolicy's, for
// the programs whose role builds its policy itself.
func WarnPrivateAddrs(log *slog.Logger, dials string) {
	log.Warn("dialling private addresses", "flag", "-allow-private-addrs",
		"note", dials+" on loopback, private, link-local and CGNAT addresses will be dialled; "+
			"others name those addresses, so use it only in a private pool (cloud metadata stays refused)")
}
