package errkind_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The names of the shared kinds, and the kind each must be made with.
var kindOfName = map[string]string{
	"ErrInvalidOption": "InvalidOption",
	"ErrInvalidConfig": "InvalidOption",
	"ErrClosed":        "Closed",
	"ErrRunTwice":      "RunTwice",
}

// ownMessage matches the message of a sentinel made with errors.New that
// should have been made with errkind.New: "x: closed", "x: store closed",
// "x: invalid option", "x: already running", "x: Run called twice".
var ownMessage = regexp.MustCompile(`^[a-z/]+: ([A-Za-z]+ )?(closed|invalid (option|config|tracker option)|already run(ning)?|run twice|called twice)$`)

// notAKind lists messages ownMessage matches that name no shared kind.
var notAKind = map[string]string{
	"lease: auction closed": "an auction's outcome, not a use after Close",
}

// scan reads the sentinels that the non-test files of one package declare
// at the top level. It returns the sentinels made with errkind.New (as
// "pkg.Name"), and a problem for each sentinel of a shared kind made
// otherwise.
func scan(fset *token.FileSet, files []*ast.File) (found, problems []string) {
	for _, f := range files {
		pkg := f.Name.Name
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					pos := fset.Position(name.Pos())
					at := fmt.Sprintf("%s:%d: %s.%s", pos.Filename, pos.Line, pkg, name.Name)
					kind, madeByKind := errkindNew(vs.Values[i])
					want, shared := kindOfName[name.Name]
					switch {
					case madeByKind && shared && kind != want:
						problems = append(problems, fmt.Sprintf("%s is made with errkind.%s, want errkind.%s", at, kind, want))
					case madeByKind:
						found = append(found, pkg+"."+name.Name)
					case shared && !isSelector(vs.Values[i]):
						problems = append(problems, fmt.Sprintf("%s is a sentinel of its own: make it with errkind.New(errkind.%s, ...) so that errors.Is matches it with the other packages' %s", at, want, name.Name))
					default:
						if msg, ok := errorsNew(vs.Values[i]); ok && ownMessage.MatchString(msg) && notAKind[msg] == "" {
							problems = append(problems, fmt.Sprintf("%s = errors.New(%q) is a sentinel of a shared kind made on its own: name it ErrInvalidOption, ErrClosed or ErrRunTwice and make it with errkind.New", at, msg))
						}
					}
				}
			}
		}
	}
	return found, problems
}

// errkindNew reports whether e is errkind.New(errkind.K, ...), and K.
func errkindNew(e ast.Expr) (kind string, ok bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || !isSel(call.Fun, "errkind", "New") || len(call.Args) < 2 {
		return "", false
	}
	if sel, ok := call.Args[0].(*ast.SelectorExpr); ok && isSel(sel, "errkind", sel.Sel.Name) {
		return sel.Sel.Name, true
	}
	return "?", true
}

// errorsNew reports whether e is errors.New("literal"), and the literal.
func errorsNew(e ast.Expr) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || !isSel(call.Fun, "errors", "New") || len(call.Args) != 1 {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// isSelector reports whether e names another package's value (pkg.Name):
// a sentinel taken over from another package, such as handoff's from
// admin, is as good as the original.
func isSelector(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	_, ok = sel.X.(*ast.Ident)
	return ok
}

func isSel(e ast.Expr, x, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == x
}

// libraryPackages parses the non-test Go files of every library package
// of the module: everything but examples/, nested modules, testdata and
// package main.
func libraryPackages(t *testing.T) (*token.FileSet, map[string][]*ast.File) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			name := d.Name()
			if rel != "." && (rel == "examples" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // a nested module (interop/)
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name != "main" {
			dir := filepath.Dir(p)
			pkgs[dir] = append(pkgs[dir], f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, pkgs
}

// TestSentinelsOfTheModule fails when a library package declares an
// invalid-option, closed or run-twice sentinel of its own (errors.New),
// and when a sentinel made with errkind.New is missing from the
// sentinels that TestKindsMatchAcrossPackages checks.
func TestSentinelsOfTheModule(t *testing.T) {
	fset, pkgs := libraryPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("parsed %d library packages; the walk is broken", len(pkgs))
	}
	var found []string
	for _, files := range pkgs {
		f, problems := scan(fset, files)
		found = append(found, f...)
		for _, p := range problems {
			t.Error(p)
		}
	}
	listed := map[string]bool{}
	for _, byName := range sentinels {
		for name := range byName {
			listed[name] = true
		}
	}
	for _, name := range found {
		if !listed[name] {
			t.Errorf("%s is made with errkind.New but missing from the sentinels of errkind_test.go", name)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("%s is listed in errkind_test.go but no library package declares it with errkind.New", name)
	}
}

// TestScanFails feeds scan small packages that break the rule, so that
// it is seen to fail, and one that keeps it.
func TestScanFails(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // substrings of the problems, one per problem
	}{
		{"kept", `package x
import "github.com/indexkit/indexkit/internal/errkind"
var ErrClosed = errkind.New(errkind.Closed, "x: closed")
var ErrInvalidOption = other.ErrInvalidOption
var ErrAuction = errors.New("lease: auction closed")`, nil},
		{"own invalid option", `package x
var ErrInvalidOption = errors.New("x: invalid option")`, []string{"x.ErrInvalidOption is a sentinel of its own"}},
		{"own closed", `package x
var (
	ErrNotFound = errors.New("x: not found")
	ErrClosed = fmt.Errorf("x: closed")
)`, []string{"x.ErrClosed is a sentinel of its own"}},
		{"wrong kind", `package x
var ErrRunTwice = errkind.New(errkind.Closed, "x: Run called twice")`, []string{"made with errkind.Closed, want errkind.RunTwice"}},
		{"other name", `package x
var ErrStoreClosed = errors.New("x: store closed")
var ErrAlreadyRun = errors.New("x: already run")`, []string{`errors.New("x: store closed")`, `errors.New("x: already run")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tc.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, problems := scan(fset, []*ast.File{f})
			if len(problems) != len(tc.want) {
				t.Fatalf("problems %q, want %d", problems, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %q does not contain %q", problems[i], w)
				}
			}
		})
	}
}
