package indexkit_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"
)

// The README's Go samples, and those of the pages under docs/, are cut
// from runnable code. In a *_test.go file
// (an Example, or the test that runs a suite), a region is the lines
// between a comment line
//
//	// README: <name>
//
// and a comment line
//
//	// README end
//
// In README.md and in each docs/*.md page, each ```go block is preceded,
// on the line just before it, by
//
//	<!-- cut from <path/to/file_test.go>, region <name> -->
//
// and holds the region's lines, dedented by their common indentation.
// TestReadme fails when a block has no marker, a marker names a file or a
// region that does not exist, a block differs from its region, or a
// region is used by no block of any of those pages. It also checks the
// ```sh blocks: every `go run ./<dir>` names a directory with a main
// package and every `make <target>` a target of the Makefile; and the
// relative links: each names a file of the tree, and its #anchor, if
// any, a heading of the page it names.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The root module and the nested module interop/ are one tree.
	for _, p := range checkReadme(string(readme), os.DirFS(".")) {
		t.Error(p)
	}
}

// TestReadmeCheckFails proves that the check fails where it must, on
// small README and source texts in memory.
func TestReadmeCheckFails(t *testing.T) {
	const example = "package x_test\n\nfunc Example() {\n\t// README: hello\n\tfmt.Println(\"hello\")\n\tif true {\n\t\tfmt.Println(\"!\")\n\t}\n\t// README end\n\n\t// Output: hello\n}\n"
	const good = "# x\n\n<!-- cut from x/example_test.go, region hello -->\n```go\nfmt.Println(\"hello\")\nif true {\n\tfmt.Println(\"!\")\n}\n```\n"
	files := func(extra fstest.MapFS) fstest.MapFS {
		fsys := fstest.MapFS{
			"x/example_test.go": {Data: []byte(example)},
			"cmd/tool/main.go":  {Data: []byte("// Tool does things.\npackage main\n\nfunc main() {}\n")},
			"lib/lib.go":        {Data: []byte("package lib\n")},
			"Makefile":          {Data: []byte("demo: ## run it\n\tgo run ./cmd/tool\n\ntest:\n\tgo test\n")},
		}
		for k, v := range extra {
			fsys[k] = v
		}
		return fsys
	}
	for _, tc := range []struct {
		name   string
		readme string
		fsys   fstest.MapFS
		want   []string // substrings of the problems, one per problem; none: no problem
	}{
		{"in step", good, files(nil), nil},
		{"drifted block",
			strings.Replace(good, "\tfmt.Println(\"!\")", "\tfmt.Println(\"?\")", 1), files(nil),
			[]string{`README.md:7: block differs from x/example_test.go region hello (line 7): README has "\tfmt.Println(\"?\")", region has "\tfmt.Println(\"!\")"`}},
		{"shorter block",
			strings.Replace(good, "}\n```", "```", 1), files(nil),
			[]string{`README.md:4: block differs from x/example_test.go region hello: README block has 3 lines, region has 4`}},
		{"missing marker",
			strings.Replace(good, "<!-- cut from x/example_test.go, region hello -->\n", "", 1), files(nil),
			[]string{"README.md:3: ```go block has no marker", "x/example_test.go:4: region hello is used by no README block"}},
		{"missing region",
			strings.Replace(good, "region hello", "region bye", 1), files(nil),
			[]string{"README.md:3: marker names region bye, which x/example_test.go does not have", "x/example_test.go:4: region hello is used by no README block"}},
		{"missing file",
			strings.Replace(good, "x/example_test.go", "y/example_test.go", 1), files(nil),
			[]string{"README.md:3: marker names y/example_test.go, which does not exist", "x/example_test.go:4: region hello is used by no README block"}},
		{"unused region", good,
			files(fstest.MapFS{"z/z_test.go": {Data: []byte("package z\n\n// README: spare\nvar x = 1\n// README end\n")}}),
			[]string{"z/z_test.go:3: region spare is used by no README block"}},
		{"unterminated region", good,
			files(fstest.MapFS{"z/z_test.go": {Data: []byte("package z\n\n// README: spare\nvar x = 1\n")}}),
			[]string{"z/z_test.go:3: region spare has no // README end"}},
		{"output glued to the region end", good,
			files(fstest.MapFS{"z/example_test.go": {Data: []byte("package z_test\n\nfunc Example() {\n\t// README: spare\n\tprintln()\n\t// README end\n\t// Output:\n}\n")}}),
			[]string{"z/example_test.go:7: region spare: put a blank line between // README end and the Output comment", "z/example_test.go:4: region spare is used by no README block"}},
		{"go run of a library", good + "\n```sh\ngo run ./lib -v\ngo run ./cmd/tool\n```\n", files(nil),
			[]string{"README.md:12: go run ./lib: lib has no main package"}},
		{"go run of nothing", good + "\n```sh\ngo run ./cmd/gone\n```\n", files(nil),
			[]string{"README.md:12: go run ./cmd/gone: cmd/gone has no main package"}},
		{"make of no target", good + "\n```sh\nmake demo   # fine\nmake tset\n```\n", files(nil),
			[]string{"README.md:13: make tset: the Makefile has no target tset"}},
		{"region used by a docs page only",
			"# x\n",
			files(fstest.MapFS{"docs/page.md": {Data: []byte(strings.Replace(good, "# x", "# page", 1))}}),
			nil},
		{"drifted block in a docs page",
			"# x\n",
			files(fstest.MapFS{"docs/page.md": {Data: []byte(strings.Replace(good, "\tfmt.Println(\"!\")", "\tfmt.Println(\"?\")", 1))}}),
			[]string{`docs/page.md:7: block differs from x/example_test.go region hello (line 7)`}},
		{"go run of nothing in a docs page", good,
			files(fstest.MapFS{"docs/page.md": {Data: []byte("# page\n\n```sh\ngo run ./cmd/gone\n```\n")}}),
			[]string{"docs/page.md:4: go run ./cmd/gone: cmd/gone has no main package"}},
		{"links in step", good + "\nSee [the page](docs/page.md#two-words), [here](#x), [a file](Makefile) and [the web](https://example.com/#a).\n",
			files(fstest.MapFS{"docs/page.md": {Data: []byte("# page\n\n## Two words\n\nBack to [the README](../README.md#x).\n")}}),
			nil},
		{"link to no file", good + "\nSee [the page](docs/gone.md).\n", files(nil),
			[]string{"README.md:11: link docs/gone.md: no such file"}},
		{"link to no heading", good + "\nSee [the page](docs/page.md#three-words) and [that](#y).\n",
			files(fstest.MapFS{"docs/page.md": {Data: []byte("# page\n\n## Two words\n")}}),
			[]string{"README.md:11: link docs/page.md#three-words: docs/page.md has no heading three-words",
				"README.md:11: link #y: README.md has no heading y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkReadme(tc.readme, tc.fsys)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d:\n got %s\nwant it to contain %s", i, got[i], w)
				}
			}
		})
	}
}

// region is the lines of one README region of a source file.
type region struct {
	file  string
	name  string
	line  int      // line of the // README: marker
	lines []string // dedented
	used  bool
}

var (
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*$`)
	markerRE   = regexp.MustCompile(`^<!-- cut from (\S+), region (\S+) -->$`)
	regionRE   = regexp.MustCompile(`^\s*// README: (\S+)\s*$`)
	regionEnd  = regexp.MustCompile(`^\s*// README end\s*$`)
	outputRE   = regexp.MustCompile(`^\s*// (Unordered output|Output):`)
	goRunRE    = regexp.MustCompile(`\bgo run \./(\S*)`)
	makeRE     = regexp.MustCompile(`^\s*make ([a-z][a-z0-9-]*)`)
	makeTarget = regexp.MustCompile(`^([a-z][a-z0-9-]*):`)
)

// checkReadme checks readme, and the pages docs/*.md of the tree fsys,
// against fsys and returns the problems: README's first, then each
// page's in name order, each in line order; then the unused regions.
func checkReadme(readme string, fsys fs.FS) []string {
	var problems []string
	regions, byFile, perr := readRegions(fsys)
	problems = append(problems, perr...)

	pages := map[string]string{"README.md": readme}
	names := []string{"README.md"}
	docs, _ := fs.Glob(fsys, "docs/*.md")
	slices.Sort(docs)
	for _, name := range docs {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		pages[name] = string(data)
		names = append(names, name)
	}
	for _, name := range names {
		problems = append(problems, checkPage(name, pages[name], pages, fsys, regions, byFile)...)
	}

	var unused []*region
	for _, r := range regions {
		if !r.used {
			unused = append(unused, r)
		}
	}
	slices.SortFunc(unused, func(a, b *region) int {
		return strings.Compare(fmt.Sprintf("%s:%09d", a.file, a.line), fmt.Sprintf("%s:%09d", b.file, b.line))
	})
	for _, r := range unused {
		problems = append(problems, fmt.Sprintf("%s:%d: region %s is used by no README block", r.file, r.line, r.name))
	}
	return problems
}

// checkPage checks the page name, whose text is text: its ```go and
// ```sh blocks and its relative links. pages holds the text of every
// page checked, by name, for the anchors of links between them.
func checkPage(name, text string, pages map[string]string, fsys fs.FS, regions map[string]*region, byFile map[string]bool) []string {
	var problems []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.TrimPrefix(fence, "```")
		start := i + 1 // index of the block's first line
		end := start
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		body := lines[start:min(end, len(lines))]
		i = end
		switch lang {
		case "go":
			problems = append(problems, checkGoBlock(name, lines, start-1, body, regions, byFile)...)
		case "sh":
			problems = append(problems, checkShBlock(name, start, body, fsys)...)
		}
	}
	return append(problems, checkLinks(name, lines, pages, fsys)...)
}

// checkLinks checks the relative links of the page name outside code
// blocks: the file a link names must exist in fsys, and its #anchor be a
// heading of that page.
func checkLinks(name string, lines []string, pages map[string]string, fsys fs.FS) []string {
	var problems []string
	inBlock := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			page := name
			if file != "" {
				page = path.Join(path.Dir(name), file)
				if _, err := fs.Stat(fsys, page); err != nil && page != "README.md" {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: no such file", name, i+1, target))
					continue
				}
			}
			if anchor == "" {
				continue
			}
			text, ok := pages[page]
			if !ok {
				data, err := fs.ReadFile(fsys, page)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: %v", name, i+1, target, err))
					continue
				}
				text = string(data)
			}
			if !slices.Contains(anchors(text), anchor) {
				problems = append(problems, fmt.Sprintf("%s:%d: link %s: %s has no heading %s", name, i+1, target, page, anchor))
			}
		}
	}
	return problems
}

// anchors returns the anchors GitHub gives the headings of a markdown
// text: lower case, spaces to hyphens, punctuation but hyphens and
// underscores dropped, and -1, -2, ... after a repeated one.
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	inBlock := false
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		m := headingRE.FindStringSubmatch(l)
		if inBlock || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// checkGoBlock checks the ```go block whose fence is lines[fence] of the
// page page.
func checkGoBlock(page string, lines []string, fence int, body []string, regions map[string]*region, byFile map[string]bool) []string {
	if fence == 0 || !markerRE.MatchString(strings.TrimSpace(lines[fence-1])) {
		return []string{fmt.Sprintf("%s:%d: ```go block has no marker <!-- cut from <file_test.go>, region <name> --> on the line before it", page, fence+1)}
	}
	m := markerRE.FindStringSubmatch(strings.TrimSpace(lines[fence-1]))
	file, name := m[1], m[2]
	if !byFile[file] {
		return []string{fmt.Sprintf("%s:%d: marker names %s, which does not exist (or is no *_test.go file)", page, fence, file)}
	}
	r, ok := regions[file+"\x00"+name]
	if !ok {
		return []string{fmt.Sprintf("%s:%d: marker names region %s, which %s does not have", page, fence, name, file)}
	}
	r.used = true
	for j := range min(len(body), len(r.lines)) {
		if body[j] != r.lines[j] {
			return []string{fmt.Sprintf("%s:%d: block differs from %s region %s (line %d): README has %q, region has %q",
				page, fence+2+j, file, name, r.line+1+j, body[j], r.lines[j])}
		}
	}
	if len(body) != len(r.lines) {
		return []string{fmt.Sprintf("%s:%d: block differs from %s region %s: README block has %d lines, region has %d",
			page, fence+1, file, name, len(body), len(r.lines))}
	}
	return nil
}

// checkShBlock checks the commands of a ```sh block whose first line is
// line first+1 of the page page.
func checkShBlock(page string, first int, body []string, fsys fs.FS) []string {
	var problems []string
	for j, l := range body {
		for _, m := range goRunRE.FindAllStringSubmatch(l, -1) {
			dir := path.Clean(strings.TrimSuffix(m[1], "/"))
			if !isMainDir(fsys, dir) {
				problems = append(problems, fmt.Sprintf("%s:%d: go run ./%s: %s has no main package", page, first+1+j, m[1], dir))
			}
		}
		if m := makeRE.FindStringSubmatch(l); m != nil && !hasMakeTarget(fsys, m[1]) {
			problems = append(problems, fmt.Sprintf("%s:%d: make %s: the Makefile has no target %s", page, first+1+j, m[1], m[1]))
		}
	}
	return problems
}

// isMainDir reports whether dir holds a non-test Go file of package main.
func isMainDir(fsys fs.FS, dir string) bool {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, n))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "package main" {
				return true
			}
		}
	}
	return false
}

// hasMakeTarget reports whether the Makefile at the root of fsys has a
// rule for target.
func hasMakeTarget(fsys fs.FS, target string) bool {
	data, err := fs.ReadFile(fsys, "Makefile")
	if err != nil {
		return false
	}
	for l := range strings.SplitSeq(string(data), "\n") {
		if m := makeTarget.FindStringSubmatch(l); m != nil && m[1] == target {
			return true
		}
	}
	return false
}

// readRegions reads the regions of every *_test.go file of fsys, keyed by
// file and name, and the set of those files.
func readRegions(fsys fs.FS) (map[string]*region, map[string]bool, []string) {
	regions := map[string]*region{}
	files := map[string]bool{}
	var problems []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		files[p] = true
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		problems = append(problems, parseRegions(p, string(data), regions)...)
		return nil
	})
	if err != nil {
		problems = append(problems, "reading the tree: "+err.Error())
	}
	return regions, files, problems
}

// parseRegions adds the regions of file, whose text is src, to regions.
func parseRegions(file, src string, regions map[string]*region) []string {
	var problems []string
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		m := regionRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		name, start := m[1], i
		end := start + 1
		for end < len(lines) && !regionEnd.MatchString(lines[end]) && !regionRE.MatchString(lines[end]) {
			end++
		}
		if end == len(lines) || !regionEnd.MatchString(lines[end]) {
			problems = append(problems, fmt.Sprintf("%s:%d: region %s has no // README end", file, start+1, name))
			continue
		}
		if end+1 < len(lines) && outputRE.MatchString(lines[end+1]) {
			// One comment group with the Output comment: go test would
			// find no output and not run the Example.
			problems = append(problems, fmt.Sprintf("%s:%d: region %s: put a blank line between // README end and the Output comment, or the Example does not run", file, end+2, name))
		}
		key := file + "\x00" + name
		if _, dup := regions[key]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: region %s is marked twice in the file", file, start+1, name))
		}
		regions[key] = &region{file: file, name: name, line: start + 1, lines: dedent(lines[start+1 : end])}
		i = end
	}
	return problems
}

// dedent removes the tabs that every non-blank line begins with.
func dedent(lines []string) []string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		out[i] = l[indent:]
	}
	return out
}
