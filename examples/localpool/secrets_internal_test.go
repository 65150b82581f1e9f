package localpool

import (
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// TestRoleCommandCarriesNoToken: a child's command line is <exe> role
// <kind>, never a token (a command line shows in ps); the tokens reach
// the roles in the spec on its standard input, which decodes to the very
// spec goroutine mode starts.
func TestRoleCommandCarriesNoToken(t *testing.T) {
	for _, sharded := range []*Sharded{nil, {QueryNodes: 2, Replication: 1}} {
		dir := t.TempDir()
		cfg, err := Config{Dir: dir, Indexers: 2, Publishers: 1, Malicious: []publishernode.Fault{publishernode.BadSignature}, Sharded: sharded}.withDefaults()
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
		p.addRole(MaliciousName(0), KindPublisher, 0, "publisher-0")
		p.addRole(RolePiece, KindPiece, 0, "api")
		if sharded != nil {
			if err := p.initSharded(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		secrets := []string{p.token}
		if sharded != nil {
			secrets = append(secrets, p.shardToken)
		}
		seen := map[string]bool{}
		for name, r := range p.roles {
			seen[r.kind] = true
			s, err := p.spec(r)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			exe := filepath.Join(dir, "exe")
			cmd, err := roleCommand(exe, s)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if want := []string{exe, RoleCommand, r.kind}; !slices.Equal(cmd.Args, want) {
				t.Errorf("%s: command line %q, want %q", name, cmd.Args, want)
			}
			for _, tok := range secrets {
				if slices.ContainsFunc(append(cmd.Args, cmd.Env...), func(a string) bool { return strings.Contains(a, tok) }) {
					t.Errorf("%s: a token is on the command line or in the environment", name)
				}
			}
			data, err := io.ReadAll(cmd.Stdin)
			if err != nil {
				t.Fatal(err)
			}
			var got roleSpec
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("%s: spec: %v", name, err)
			}
			if !reflect.DeepEqual(&got, s) {
				t.Errorf("%s: the spec on standard input decodes to\n%+v\nwant\n%+v", name, got, *s)
			}
			switch r.kind {
			case KindIndexer:
				c := got.Indexer
				if c.AdminToken != p.token || c.HandoffFromFile != filepath.Join(dir, HandoffFromFile) {
					t.Errorf("%s: AdminToken or HandoffFromFile %q lost", name, c.HandoffFromFile)
				}
				if sharded != nil && (c.Shard == nil || c.Shard.Token != p.shardToken) {
					t.Errorf("%s: shard token lost", name)
				}
			case KindAssigner:
				if got.Assigner.AdminToken != p.token {
					t.Errorf("%s: AdminToken lost", name)
				}
			case KindQuery:
				if got.Query.Token != p.shardToken {
					t.Errorf("%s: Token lost", name)
				}
			}
		}
		if len(seen) != len(kinds)-map[bool]int{true: 1}[sharded == nil] {
			t.Errorf("kinds seen %v", seen)
		}
	}
}
