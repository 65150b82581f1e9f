package importrules

// The checker of the construction convention, run on small sources with one violation each: each rule can fail.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestConstructionConventionCheck runs the checker on small packages with
// one violation each, so that every rule is seen to fail when it should
// (and a clean package to pass).
func TestConstructionConventionCheck(t *testing.T) {
	const clean = `package p

import (
	"log/slog"
	"net/http"
)

type Thing struct{ log *slog.Logger; hc *http.Client; n int }

type Option func(*config) error

type config struct {
	logger *slog.Logger
	client *http.Client
	hooks  Hooks
	n      int
}

type Hooks struct{ Done func() }

func New(n int, opts ...Option) (*Thing, error) {
	c := &config{n: n}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	_ = c.hooks
	return &Thing{log: c.logger, hc: c.client, n: c.n}, nil
}

func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.logger = l; return nil } }
func WithHTTPClient(hc *http.Client) Option { return func(c *config) error { c.client = hc; return nil } }
func WithHooks(h Hooks) Option { return func(c *config) error { c.hooks = h; return nil } }
func WithN(n int) Option { return func(c *config) error { c.n = n; return nil } }
`
	tests := []struct {
		name  string
		src   string
		rule  string
		words []string
	}{
		{name: "clean", src: clean},
		{name: "options of another package", src: `package p
import "example.com/other"
type T struct{}
func New(opts ...other.Option) (*T, error) { return nil, nil }
`, rule: ruleShape, words: []string{"New takes options of type other.Option"}},
		{name: "options as a struct", src: `package p
type T struct{}
type Options struct{ N int }
func Open(dir string, opts *Options) (*T, error) { return nil, nil }
`, rule: ruleShape, words: []string{"Open takes its options as *Options"}},
		{name: "option without error", src: `package p
type T struct{}
type config struct{ n int }
type Option func(*config)
func New(opts ...Option) (*T, error) { var c config; _ = c.n; return nil, nil }
`, rule: ruleShape, words: []string{"option type Option is func(*config)"}},
		{name: "option type not declared here", src: `package p
type T struct{}
func New(opts ...Option) (*T, error) { return nil, nil }
`, rule: ruleShape, words: []string{"Option, which is not declared in this package"}},
		{name: "option type of a verb", src: `package p
type verifyConfig struct{ strict bool }
type VerifyOption func(*verifyConfig)
func Verify(opts ...VerifyOption) error { var c verifyConfig; _ = c.strict; return nil }
`, rule: ruleShape, words: []string{"option type VerifyOption"}},
		{name: "one option type, two results", src: `package p
type Client struct{}
type Publisher struct{}
type config struct{ n int }
type Option func(*config) error
func New(opts ...Option) (*Client, error) { var c config; _ = c.n; return nil, nil }
func NewPublisher(opts ...Option) (*Publisher, error) { return nil, nil }
`, rule: ruleOneType, words: []string{"option type Option configures both Client (New) and Publisher (NewPublisher)"}},
		{name: "option writes an exported struct", src: `package p
type Sender struct{ ua string }
type SenderOption func(*Sender) error
func NewSender(opts ...SenderOption) (*Sender, error) { return nil, nil }
`, rule: ruleNoStruct, words: []string{"option type SenderOption writes the exported Sender"}},
		{name: "logger option misnamed", src: strings.Replace(clean, "func WithLogger(", "func WithLog(", 1),
			rule: ruleNames, words: []string{"WithLog sets the logger of Option; name it WithLogger"}},
		{name: "HTTP client option misnamed", src: strings.Replace(clean, "func WithHTTPClient(", "func WithClientHTTP(", 1),
			rule: ruleNames, words: []string{"WithClientHTTP sets the httpclient of Option; name it WithHTTPClient"}},
		{name: "hooks option misnamed", src: strings.Replace(clean, "func WithHooks(", "func WithMetrics(", 1),
			rule: ruleNames, words: []string{"WithMetrics sets the hooks of Option; name it WithHooks"}},
		{name: "prefixed logger with one option type", src: strings.Replace(clean, "func WithLogger(", "func WithThingLogger(", 1),
			rule: ruleNames, words: []string{"name it WithLogger"}},
		{name: "prefixed logger with several option types", src: clean + `
type Gossip struct{}
type GossipOption func(*gossipConfig) error
type gossipConfig struct{ logger *slog.Logger }
func NewGossip(opts ...GossipOption) (*Gossip, error) { var c gossipConfig; _ = c.logger; return nil, nil }
func WithGossipLog(l *slog.Logger) GossipOption { return func(c *gossipConfig) error { c.logger = l; return nil } }
`, rule: ruleNames, words: []string{"name it WithLogger or WithGossipLogger"}},
		{name: "option accepted and ignored", src: clean + `
func WithRetries(n int) Option { return func(c *config) error { c.retries = n; return nil } }
`, rule: ruleIgnored, words: []string{"WithRetries sets c.retries, which nothing but options reads"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			got := checkConstruction(fset, "p", []*ast.File{f})
			if tt.rule == "" {
				for _, v := range got {
					t.Errorf("unexpected: %s", v)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("got %d violations, want 1 of %s: %v", len(got), tt.rule, got)
			}
			v := got[0]
			if v.rule != tt.rule {
				t.Errorf("rule = %q, want %q (%s)", v.rule, tt.rule, v)
			}
			if !strings.HasPrefix(v.pos, "p.go:") {
				t.Errorf("position %q does not name the file and line", v.pos)
			}
			for _, w := range tt.words {
				if !strings.Contains(v.String(), w) {
					t.Errorf("%q does not say %q", v, w)
				}
			}
		})
	}
	t.Run("a pending tree without violations fails", func(t *testing.T) {
		got := stalePending(map[string]string{"a/...": "in progress", "b/...": "in progress"}, map[string]int{"a/...": 2})
		if len(got) != 1 || !strings.Contains(got[0], "pending tree b/...") || !strings.Contains(got[0], "remove it from pending") {
			t.Errorf("stalePending = %q, want one message about b/...", got)
		}
	})
	t.Run("a backend takes the options of its parent package", func(t *testing.T) {
		check := func(dir, src string) []cviolation {
			t.Helper()
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			return checkConstruction(fset, dir, []*ast.File{f})
		}
		const backend = `package memory
import %s
type Store struct{}
func New(opts ...%s.Option) (*Store, error) { return nil, nil }
`
		if got := check("lease/memory", fmt.Sprintf(backend, `"example.com/m/lease"`, "lease")); len(got) != 0 {
			t.Errorf("lease/memory.New(...lease.Option): unexpected %v", got)
		}
		if got := check("lease/memory", fmt.Sprintf(backend, `plug "example.com/m/lease"`, "plug")); len(got) != 0 {
			t.Errorf("lease/memory.New(...plug.Option), plug the parent: unexpected %v", got)
		}
		for name, c := range map[string]struct{ dir, imp, sel string }{
			"a sibling's options":     {"lease/memory", `"example.com/m/other"`, "other"},
			"a grandparent's options": {"x/lease/memory", `"example.com/m/x"`, "x"},
			"a child's options":       {"lease", `"example.com/m/lease/memory"`, "memory"},
			"no parent":               {"memory", `"example.com/m/lease"`, "lease"},
		} {
			got := check(c.dir, fmt.Sprintf(backend, c.imp, c.sel))
			if len(got) != 1 || got[0].rule != ruleShape || !strings.Contains(got[0].msg, "New takes options of type "+c.sel+".Option") {
				t.Errorf("%s: got %v, want one violation of %s", name, got, ruleShape)
			}
		}
	})
	t.Run("a field read by a backend forwarding the options is read", func(t *testing.T) {
		src := clean + `
func WithRetries(n int) Option { return func(c *config) error { c.retries = n; return nil } }
`
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkConstructionWith(fset, "p", []*ast.File{f}, map[string]bool{"retries": true}); len(got) != 0 {
			t.Errorf("unexpected: %v", got)
		}
	})
	t.Run("with several option types a prefixed logger option passes", func(t *testing.T) {
		src := clean + `
type Gossip struct{}
type GossipOption func(*gossipConfig) error
type gossipConfig struct{ logger *slog.Logger }
func NewGossip(opts ...GossipOption) (*Gossip, error) { var c gossipConfig; _ = c.logger; return nil, nil }
func WithGossipLogger(l *slog.Logger) GossipOption { return func(c *gossipConfig) error { c.logger = l; return nil } }
`
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkConstruction(fset, "p", []*ast.File{f}); len(got) != 0 {
			t.Errorf("unexpected: %v", got)
		}
	})
}
