// Command lanes reads the JSON events of `go test -short -json` on its
// standard input, prints what `go test` would print without -json (a line
// per package, and the output of every test that failed), and writes the
// import paths of the packages that hold integration-lane tests to the file
// named by -integration, one a line. It exits 1 when a package failed or
// did not build, and 2 when it could not read its input.
//
// `make test` runs the unit lane under -race through it, then runs the
// integration lane (go test without -short) on those packages only: a
// package whose tests all ran under -short has nothing left to run, and
// running its unit tests a second time without -race would only repeat
// them. A package holds integration-lane tests when one of its tests
// skipped itself or ran a smaller form under -short through package lane
// ([lane.Integration], [lane.Full]), whose messages begin with
// [lane.Marker].
//
// Usage:
//
//	go test -race -short -json ./... | go run ./internal/testbed/lane/lanes -integration FILE
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	list := flag.String("integration", "", "write the packages that hold integration-lane tests to this file")
	flag.Parse()
	if *list == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: go test -short -json ./... | lanes -integration FILE")
		os.Exit(2)
	}
	sum, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lanes:", err)
		os.Exit(2)
	}
	if err := writeList(*list, sum.integration); err != nil {
		fmt.Fprintln(os.Stderr, "lanes:", err)
		os.Exit(2)
	}
	fmt.Printf("lanes: %d packages, %d failed; %d hold integration-lane tests (listed in %s)\n",
		sum.packages, len(sum.failed), len(sum.integration), *list)
	if len(sum.failed) > 0 {
		os.Exit(1)
	}
}

// writeList writes pkgs to the file at path, one a line.
func writeList(path string, pkgs []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for _, p := range pkgs {
		if _, err := io.WriteString(f, p+"\n"); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
