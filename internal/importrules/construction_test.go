package importrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// This file enforces the construction convention of the root package's
// documentation (doc.go, "Constructing things"): how constructors take
// options. Each check below is one numbered rule there; a failure names
// the file and line and quotes the rule.
//
// The check reads the syntax of the module's public packages (go/parser,
// no type checking): every non-test .go file outside internal/,
// examples/, testdata/ and nested modules, except package main.

// Rule numbers and texts, as doc.go states them.
const (
	ruleShape    = "rule 2 (an option type is a func(*config) error over an unexported config, declared beside its constructor)"
	ruleOneType  = "rule 3 (one option type per constructor)"
	ruleNoStruct = "rule 4 (no option writes an exported struct)"
	ruleIgnored  = "rule 5 (no option is accepted and ignored)"
	ruleNames    = "rule 7 (consistent names: WithLogger, WithHTTPClient, WithHooks, WithClock)"
)

// pending lists the package trees other #14 work is converting to the
// convention right now: their violations are reported in the log, not as
// failures. An entry whose tree has no violation any more fails the test,
// so the list only shrinks: remove the entry when the tree is clean.
var pending = map[string]string{}

// cviolation is one breach of the convention.
type cviolation struct {
	pkg  string // package directory, relative to the module root
	pos  string // file:line
	rule string
	msg  string
}

func (v cviolation) String() string { return fmt.Sprintf("%s: %s: %s", v.pos, v.msg, v.rule) }

// TestConstructionConvention checks every public package of the module.
func TestConstructionConvention(t *testing.T) {
	root := moduleRoot(t)
	pkgs := parseModule(t, root)
	if len(pkgs) == 0 {
		t.Fatalf("no package parsed under %s", root)
	}
	var dirs []string
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	// What the packages forwarding their parent's options (rule 6) read
	// of the parent's config counts as read for rule 5: the backends of
	// lease read the lease.Config that lease.NewConfig builds.
	childReads := map[string]map[string]bool{}
	for _, d := range dirs {
		if parent := path.Dir(d); parent != "." && takesParentOptions(d, pkgs[d].files) {
			if childReads[parent] == nil {
				childReads[parent] = map[string]bool{}
			}
			for _, f := range pkgs[d].files {
				collectReads(f, childReads[parent])
			}
		}
	}
	pendingHit := map[string]int{}
	for _, d := range dirs {
		p := pkgs[d]
		for _, v := range checkConstructionWith(p.fset, d, p.files, childReads[d]) {
			if tree := pendingTree(d); tree != "" {
				pendingHit[tree]++
				t.Logf("pending (%s): %s", tree, v)
				continue
			}
			t.Error(v)
		}
	}
	for _, msg := range stalePending(pending, pendingHit) {
		t.Error(msg)
	}
}

// stalePending names the entries of pending that hit no violation.
func stalePending(pending map[string]string, hits map[string]int) []string {
	var out []string
	for tree, why := range pending {
		if hits[tree] == 0 {
			out = append(out, fmt.Sprintf("pending tree %s (%s) has no violation of the construction convention any more: remove it from pending in internal/importrules/construction_test.go", tree, why))
		}
	}
	sort.Strings(out)
	return out
}

func pendingTree(dir string) string {
	for tree := range pending {
		base := strings.TrimSuffix(tree, "/...")
		if dir == base || strings.HasPrefix(dir, base+"/") {
			return tree
		}
	}
	return ""
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	gomod := strings.TrimSpace(string(goCmd(t, ".", "env", "GOMOD")))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	return filepath.Dir(gomod)
}

type parsedPkg struct {
	fset  *token.FileSet
	files []*ast.File
}

// parseModule parses the public packages' non-test files, by directory
// relative to root.
func parseModule(t *testing.T, root string) map[string]*parsedPkg {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]*parsedPkg{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			name := d.Name()
			if name == "internal" || name == "testdata" || rel == "examples" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module (interop)
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		p := out[dir]
		if p == nil {
			p = &parsedPkg{fset: fset}
			out[dir] = p
		}
		p.files = append(p.files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkConstruction checks the files of one package against the rules.
func checkConstruction(fset *token.FileSet, pkg string, files []*ast.File) []cviolation {
	return checkConstructionWith(fset, pkg, files, nil)
}

// checkConstructionWith is checkConstruction where the field names in
// childReads count as read (rule 5): they are read by the packages that
// take this package's options to build their values.
func checkConstructionWith(fset *token.FileSet, pkg string, files []*ast.File, childReads map[string]bool) []cviolation {
	var out []cviolation
	add := func(pos token.Pos, rule, format string, args ...any) {
		p := fset.Position(pos)
		out = append(out, cviolation{pkg: pkg, pos: fmt.Sprintf("%s:%d", p.Filename, p.Line), rule: rule, msg: fmt.Sprintf(format, args...)})
	}

	types := map[string]*ast.TypeSpec{}
	var funcs []*ast.FuncDecl
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						types[ts.Name.Name] = ts
					}
				}
			case *ast.FuncDecl:
				funcs = append(funcs, d)
			}
		}
	}

	// Option types: named types called *Option, and whatever a
	// constructor takes as its options.
	optTypes := map[string]bool{}
	for name := range types {
		if strings.HasSuffix(name, "Option") && ast.IsExported(name) {
			optTypes[name] = true
		}
	}
	type use struct {
		result string
		pos    token.Pos
		ctor   string
	}
	uses := map[string][]use{}
	for _, fd := range funcs {
		name := fd.Name.Name
		if fd.Recv != nil || !ast.IsExported(name) || !(strings.HasPrefix(name, "New") || strings.HasPrefix(name, "Open")) {
			continue
		}
		params := fd.Type.Params.List
		for i, field := range params {
			last := i == len(params)-1
			ell, variadic := field.Type.(*ast.Ellipsis)
			if !variadic || !last {
				if slices.ContainsFunc(field.Names, func(n *ast.Ident) bool { return n.Name == "opts" || n.Name == "options" }) {
					add(field.Pos(), ruleShape, "%s takes its options as %s, not as variadic options of a func type", name, exprString(field.Type))
				}
				continue
			}
			if !isOptionParam(field, ell.Elt) {
				continue
			}
			if isParentOption(pkg, fileOf(files, field.Pos()), ell.Elt) {
				continue // a backend forwarding its plug point's options (rule 6)
			}
			id, ok := ell.Elt.(*ast.Ident)
			if !ok {
				add(field.Pos(), ruleShape, "%s takes options of type %s, not an option type declared in its own package", name, exprString(ell.Elt))
				continue
			}
			if _, ok := types[id.Name]; !ok {
				add(field.Pos(), ruleShape, "%s takes options of type %s, which is not declared in this package", name, id.Name)
				continue
			}
			optTypes[id.Name] = true
			res := "nothing"
			if fd.Type.Results != nil && len(fd.Type.Results.List) > 0 {
				r := fd.Type.Results.List[0].Type
				if s, ok := r.(*ast.StarExpr); ok {
					r = s.X
				}
				res = exprString(r)
			}
			uses[id.Name] = append(uses[id.Name], use{res, fd.Pos(), name})
		}
	}

	// Rules 2 and 4: the shape of each option type.
	configOf := map[string]string{} // option type -> its config type
	for name := range optTypes {
		ts := types[name]
		ft, ok := ts.Type.(*ast.FuncType)
		if !ok {
			add(ts.Pos(), ruleShape, "option type %s is %s, not a func(*config) error", name, exprString(ts.Type))
			continue
		}
		var param string
		if ft.Params != nil && len(ft.Params.List) == 1 && len(ft.Params.List[0].Names) <= 1 {
			if s, ok := ft.Params.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok {
					param = id.Name
				}
			}
		}
		okResult := ft.Results != nil && len(ft.Results.List) == 1 && len(ft.Results.List[0].Names) == 0 &&
			exprString(ft.Results.List[0].Type) == "error"
		switch {
		case param == "" || !okResult:
			add(ts.Pos(), ruleShape, "option type %s is %s, not a func(*config) error over a config of this package", name, exprString(ft))
		case ast.IsExported(param):
			add(ts.Pos(), ruleNoStruct, "option type %s writes the exported %s, not an unexported config", name, param)
		default:
			configOf[name] = param
		}
	}

	// Rule 3: one option type, one kind of result.
	for name, us := range uses {
		for _, u := range us[1:] {
			if u.result != us[0].result {
				add(u.pos, ruleOneType, "option type %s configures both %s (%s) and %s (%s)", name, us[0].result, us[0].ctor, u.result, u.ctor)
			}
		}
	}

	// The option functions: exported funcs returning an option type.
	optFuncs := map[*ast.FuncDecl]string{}
	perType := map[string]int{}
	for _, fd := range funcs {
		if fd.Recv != nil || fd.Type.Results == nil || len(fd.Type.Results.List) != 1 {
			continue
		}
		id, ok := fd.Type.Results.List[0].Type.(*ast.Ident)
		if !ok || !optTypes[id.Name] {
			continue
		}
		optFuncs[fd] = id.Name
		perType[id.Name]++
	}

	// Rule 7: names of the options that take the usual things.
	nOptTypes := len(optTypes)
	for fd, typ := range optFuncs {
		name := fd.Name.Name
		if !ast.IsExported(name) || fd.Type.Params == nil || len(fd.Type.Params.List) != 1 || len(fd.Type.Params.List[0].Names) > 1 {
			continue
		}
		thing := ""
		switch pt := exprString(fd.Type.Params.List[0].Type); {
		case pt == "*slog.Logger":
			thing = "Logger"
		case pt == "*http.Client":
			thing = "HTTPClient"
		case pt == "Hooks" || strings.HasSuffix(pt, ".Hooks"):
			thing = "Hooks"
		case pt == "Clock" || strings.HasSuffix(pt, ".Clock"):
			thing = "Clock"
		default:
			continue
		}
		want := []string{"With" + thing}
		if nOptTypes > 1 {
			want = append(want, "With"+strings.TrimSuffix(typ, "Option")+thing)
		}
		if !slices.Contains(want, name) {
			add(fd.Pos(), ruleNames, "%s sets the %s of %s; name it %s", name, strings.ToLower(thing), typ, strings.Join(want, " or "))
		}
	}

	// Rule 5: every config field an option sets is read by code that is
	// not an option.
	read := map[string]bool{}
	for name := range childReads {
		read[name] = true
	}
	for _, fd := range funcs {
		if _, isOpt := optFuncs[fd]; isOpt || fd.Body == nil {
			continue
		}
		collectReads(fd.Body, read)
	}
	for fd, typ := range optFuncs {
		if _, ok := configOf[typ]; !ok || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			lit, ok := n.(*ast.FuncLit)
			if !ok || len(lit.Type.Params.List) != 1 || len(lit.Type.Params.List[0].Names) != 1 {
				return true
			}
			param := lit.Type.Params.List[0].Names[0].Name
			ast.Inspect(lit.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok {
					return true
				}
				for _, lhs := range as.Lhs {
					sel, ok := lhs.(*ast.SelectorExpr)
					if !ok || rootIdent(sel) != param {
						continue
					}
					if !read[sel.Sel.Name] {
						add(as.Pos(), ruleIgnored, "%s sets %s.%s, which nothing but options reads", fd.Name.Name, exprString(sel.X), sel.Sel.Name)
					}
				}
				return true
			})
			return false
		})
	}

	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// isParentOption tells whether elt, the option type of a constructor in
// the package at dir, is the Option type of the parent package (the
// directory one level up), imported by f: lease/memory.New(opts
// ...lease.Option). A backend so forwards the options of the package that
// defines its plug point (rule 6).
func isParentOption(dir string, f *ast.File, elt ast.Expr) bool {
	sel, ok := elt.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Option" || f == nil {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	parent := path.Dir(dir)
	if !ok || parent == "." {
		return false
	}
	for _, imp := range f.Imports {
		p := strings.Trim(imp.Path.Value, "`\"")
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == x.Name {
			return p == parent || strings.HasSuffix(p, "/"+parent)
		}
	}
	return false
}

// takesParentOptions tells whether a constructor of the package at dir
// takes the options of its parent package.
func takesParentOptions(dir string, files []*ast.File) bool {
	for _, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || len(fd.Type.Params.List) == 0 {
				continue
			}
			last := fd.Type.Params.List[len(fd.Type.Params.List)-1]
			if ell, ok := last.Type.(*ast.Ellipsis); ok && isParentOption(dir, f, ell.Elt) {
				return true
			}
		}
	}
	return false
}

// fileOf returns the file of files that holds pos.
func fileOf(files []*ast.File, pos token.Pos) *ast.File {
	for _, f := range files {
		if f.FileStart <= pos && pos <= f.FileEnd {
			return f
		}
	}
	return nil
}

// isOptionParam tells whether the variadic parameter field of type elt
// takes options (rather than, say, protocols).
func isOptionParam(field *ast.Field, elt ast.Expr) bool {
	switch e := elt.(type) {
	case *ast.Ident:
		if strings.HasSuffix(e.Name, "Option") {
			return true
		}
	case *ast.SelectorExpr:
		if strings.HasSuffix(e.Sel.Name, "Option") {
			return true
		}
	case *ast.FuncType:
		return true
	}
	return slices.ContainsFunc(field.Names, func(n *ast.Ident) bool { return n.Name == "opts" || n.Name == "options" })
}

// collectReads records the field names selected in body, except where the
// selection is only assigned to.
func collectReads(body ast.Node, read map[string]bool) {
	assigned := map[*ast.SelectorExpr]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.ASSIGN || n.Tok == token.DEFINE {
				for _, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok {
						assigned[sel] = true
					}
				}
			}
		case *ast.SelectorExpr:
			if !assigned[n] {
				read[n.Sel.Name] = true
			}
		}
		return true
	})
}

func rootIdent(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		case *ast.ParenExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return ""
		}
	}
}

// exprString prints a type expression compactly.
func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case nil:
		return ""
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(x.X)
	case *ast.ArrayType:
		return "[]" + exprString(x.Elt)
	case *ast.Ellipsis:
		return "..." + exprString(x.Elt)
	case *ast.MapType:
		return "map[" + exprString(x.Key) + "]" + exprString(x.Value)
	case *ast.IndexExpr:
		return exprString(x.X) + "[" + exprString(x.Index) + "]"
	case *ast.FuncType:
		var ps, rs []string
		if x.Params != nil {
			for _, f := range x.Params.List {
				for range max(1, len(f.Names)) {
					ps = append(ps, exprString(f.Type))
				}
			}
		}
		if x.Results != nil {
			for _, f := range x.Results.List {
				for range max(1, len(f.Names)) {
					rs = append(rs, exprString(f.Type))
				}
			}
		}
		s := "func(" + strings.Join(ps, ", ") + ")"
		switch len(rs) {
		case 0:
		case 1:
			s += " " + rs[0]
		default:
			s += " (" + strings.Join(rs, ", ") + ")"
		}
		return s
	case *ast.InterfaceType:
		return "interface{...}"
	case *ast.StructType:
		return "struct{...}"
	}
	return fmt.Sprintf("%T", e)
}

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
