package codeindex_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
)

// An index of two files answers substring queries; its snapshot, written
// to a directory and loaded back, answers the same.
func Example() {
	ix := codeindex.New([]codeindex.File{
		{Path: "main.go", Data: []byte("package main\n\nfunc main() {\n\tprintln(\"hello, fleet\")\n}\n")},
		{Path: "README.md", Data: []byte("# hello\nA fleet of nodes.\n")},
	})
	for _, q := range []string{"fleet", "he"} {
		ms, _, _ := ix.Search(q, 10)
		for _, m := range ms {
			fmt.Printf("%s\t%s:%d: %s\n", q, m.Path, m.Line, strings.TrimSpace(m.Text))
		}
	}

	tmp, _ := os.MkdirTemp("", "snapshots-")
	defer os.RemoveAll(tmp)
	dir := codeindex.Dir(filepath.Join(tmp, "snapshots"))
	const commit = "0123456789abcdef0123456789abcdef01234567"
	if err := dir.Store("hello-repo", commit, ix); err != nil {
		fmt.Println(err)
		return
	}
	loaded, err := dir.Load("hello-repo", commit)
	if err != nil {
		fmt.Println(err)
		return
	}
	ms, _, _ := loaded.Search("nodes", 10)
	fmt.Println("loaded:", loaded.Size() == ix.Size(), ms[0].Path, ms[0].Line)
	// Output:
	// fleet	README.md:2: A fleet of nodes.
	// fleet	main.go:4: println("hello, fleet")
	// he	README.md:1: # hello
	// he	main.go:4: println("hello, fleet")
	// loaded: true README.md 2
}
