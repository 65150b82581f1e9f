package indexernode

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
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
		if _, err := readURLFile(c.HandoffFromFile); err != nil {
			return fmt.Errorf("-handoff-from-file: %w", err)
		}
	}
	return nil
}

// handoffOption is the receiver's option for a list of frozen indexers'
// find URLs or a file of them (path), nil for neither: any FrozenURL is
// accepted.
func handoffOption(list []string, path string) handoff.Option {
	switch {
	case len(list) > 0:
		return handoff.WithFrozenIndexers(list...) // the handoff package checks the URLs
	case path != "":
		return handoff.WithFrozenIndexersFunc(func(context.Context) ([]string, error) {
			urls, err := readURLFile(path)
			if err != nil {
				return nil, fmt.Errorf("handoff-from file: %w", err)
			}
			return urls, nil
		})
	}
	return nil
}

// maxURLFile bounds a -handoff-from-file.
const maxURLFile = 1 << 20

// readURLFile reads a file of URLs, one per line; blank lines and lines
// starting with # are skipped. An empty list is an error: it would refuse
// every handoff, which is not what an empty file means to an operator.
func readURLFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > maxURLFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxURLFile)
	}
	var urls []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		urls = append(urls, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%s: no URL", path)
	}
	return urls, nil
}
