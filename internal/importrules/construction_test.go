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
