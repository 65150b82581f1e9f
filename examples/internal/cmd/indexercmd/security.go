package indexercmd

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/handoff"
)

// logSecurity logs how the admin API is protected and whose handoffs it
// takes; at WARN what leaves it open.
func logSecurity(log *slog.Logger, cfg fileConfig, tok cli.Token) {
	if tok.Warning != "" {
		log.Warn("admin token: " + tok.Warning)
	}
	if tok.Value != "" {
		log.Info("admin API requires a bearer token", "source", tok.Source)
	} else {
		log.Info("admin API has no token: it relies on listening on loopback, and answers only a loopback Host or -admin-hosts and no web page",
			"addr", cfg.Admin, "admin_hosts", cfg.AdminHosts)
	}
	if cfg.UseAssigner && cfg.HandoffFrom == "" && cfg.HandoffFromFile == "" {
		log.Warn("handoffs are accepted from any frozen indexer the admin caller names (FrozenURL); " +
			"set -handoff-from or -handoff-from-file to the pool's find URLs")
	}
}

// adminToken resolves the admin API's token (-admin-token, or the first
// line of -admin-token-file, or $INDEXKIT_ADMIN_TOKEN read through
// getenv; see cli.ResolveAdminToken) and refuses an admin listener off
// loopback without one ([ErrAdminNeedsToken]).
func (c fileConfig) adminToken(getenv func(string) string) (cli.Token, error) {
	tok, err := cli.ResolveAdminToken(c.AdminToken, c.AdminTokenFile, getenv)
	if err != nil {
		return tok, err
	}
	if tok.Value == "" && !cli.IsLoopback(c.Admin) {
		return tok, fmt.Errorf("-admin %s: %w: anyone who reaches it could freeze the node, assign publishers or forge handoffs; "+
			"set -admin-token-file FILE or $%s (or -admin-token, which shows in ps), or listen on 127.0.0.1",
			c.Admin, ErrAdminNeedsToken, cli.EnvAdminToken)
	}
	return tok, nil
}

// validateHandoffFrom checks -handoff-from and -handoff-from-file: at
// most one, URLs a handoff could name, a file that reads.
func (c fileConfig) validateHandoffFrom() error {
	switch {
	case c.HandoffFrom != "" && c.HandoffFromFile != "":
		return errors.New("give -handoff-from or -handoff-from-file, not both")
	case c.HandoffFrom != "" && strings.Trim(c.HandoffFrom, ", ") == "":
		return fmt.Errorf("-handoff-from %q: no URL", c.HandoffFrom)
	case c.HandoffFromFile != "":
		if _, err := handoff.ReadFrozenIndexersFile(c.HandoffFromFile); err != nil {
			return fmt.Errorf("-handoff-from-file: %w", err)
		}
	}
	return nil
}

// EnvShardToken is the environment variable holding the query nodes'
// bearer token when no -shard-token-file is given.
const EnvShardToken = "INDEXKIT_SHARD_TOKEN"

// shardToken reads the query nodes' token from path, else from
// $INDEXKIT_SHARD_TOKEN.
func shardToken(path string, getenv func(string) string) (string, error) {
	if path != "" {
		tok, _, err := cli.ReadTokenFile(path)
		if err != nil {
			return "", fmt.Errorf("-shard-token-file: %w", err)
		}
		return tok, nil
	}
	return strings.TrimSpace(getenv(EnvShardToken)), nil
}

// hostList splits a comma-separated list of host names.
func hostList(s string) []string { return commaList(s) }

// handoffFromList splits a comma-separated list of URLs.
func handoffFromList(s string) []string { return commaList(s) }

func commaList(s string) []string {
	var out []string
	for u := range strings.SplitSeq(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}
