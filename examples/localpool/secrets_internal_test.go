package localpool

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestArgsCarryNoToken: the roles' command lines name the token file,
// never the token (a command line shows in ps).
func TestArgsCarryNoToken(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Config{Dir: dir, Indexers: 2, Publishers: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p := &Pool{cfg: cfg, roles: map[string]*role{}, token: strings.Repeat("7e", 32)}
	for i := range cfg.Indexers {
		p.addRole(IndexerName(i), KindIndexer, i, "find", "ingest", "admin")
	}
	p.addRole(RoleAssigner, KindAssigner, 0, "announce", "state")
	p.addRole(RoleScatter, KindScatter, 0, "find")
	p.addRole(RolePublishers, KindPublisher, 0, "publisher-0").publishers = 1
	p.addRole(RolePiece, KindPiece, 0, "api")
	for _, r := range p.roles {
		if err := pickPorts(r); err != nil {
			t.Fatal(err)
		}
	}
	tokenFile := filepath.Join(dir, AdminTokenFile)
	for name, r := range p.roles {
		args := p.args(r)
		if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, p.token) }) {
			t.Errorf("%s: the token is on the command line %q", name, args)
		}
		wantFile := r.kind == KindIndexer || r.kind == KindAssigner
		if i := slices.Index(args, "-admin-token-file"); (i >= 0) != wantFile || (wantFile && args[i+1] != tokenFile) {
			t.Errorf("%s: -admin-token-file in %q, want %v (%s)", name, args, wantFile, tokenFile)
		}
		if i := slices.Index(args, "-handoff-from-file"); (i >= 0) != (r.kind == KindIndexer) ||
			(i >= 0 && args[i+1] != filepath.Join(dir, HandoffFromFile)) {
			t.Errorf("%s: -handoff-from-file in %q", name, args)
		}
	}
}
