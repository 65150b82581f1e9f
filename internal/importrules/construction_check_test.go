package importrules

// The construction convention's checker: what each rule looks for in a package's syntax.

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"slices"
	"sort"
	"strings"
)

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
