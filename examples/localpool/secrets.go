package localpool

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Files of the pool in Config.Dir that its roles read.
const (
	// AdminTokenFile holds the pool's admin token (mode 0600), for the
	// pool's user: every indexer requires it on its admin API and the
	// assigner sends it (both have it in their Config). A new random
	// token is written at each [Start]; it never appears on a command
	// line.
	AdminTokenFile = "admin-token"
	// HandoffFromFile lists the find URLs of the pool's indexers, one per
	// line: the frozen indexers a handoff may name. Every indexer reads
	// it at each handoff (its Config.HandoffFromFile), and the pool
	// rewrites it once it has started an indexer, so one added by
	// [Pool.AddIndexer] is accepted by the indexers already running
	// without a restart.
	HandoffFromFile = "handoff-from"
)

// newAdminToken writes a fresh random token (32 bytes, hex) to
// dir/AdminTokenFile and returns it.
func newAdminToken(dir string) (string, error) {
	return newToken(filepath.Join(dir, AdminTokenFile))
}

// newToken writes a fresh random token (32 bytes, hex) to path (mode
// 0600) and returns it.
func newToken(path string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pool: token: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	if err := writeFileAtomic(path, tok+"\n", 0o600); err != nil {
		return "", fmt.Errorf("pool: token %s: %w", filepath.Base(path), err)
	}
	return tok, nil
}

// writeHandoffFrom writes the find URLs of the indexers that have ports
// to dir/HandoffFromFile; p.mu is held.
func (p *Pool) writeHandoffFromLocked() error {
	var b strings.Builder
	b.WriteString("# find URLs of the pool's indexers: the frozen indexers a handoff may name\n")
	for _, name := range p.indexers {
		if r := p.roles[name]; len(r.ports) > 0 {
			b.WriteString(r.url("find") + "\n")
		}
	}
	if err := writeFileAtomic(filepath.Join(p.cfg.Dir, HandoffFromFile), b.String(), 0o644); err != nil {
		return fmt.Errorf("pool: %s: %w", HandoffFromFile, err)
	}
	return nil
}

// writeFileAtomic replaces path with data, so that a reader sees the old
// file or the new one, never a part.
func writeFileAtomic(path, data string, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil { // whatever the umask
		return err
	}
	return os.Rename(tmp, path)
}
