// Package importrules holds only tests: the one that enforces the import
// rules of DESIGN.md on every package of the module (and the library
// roles' dependencies), and the one that
// enforces the construction convention of the root package's
// documentation on every public package.
//
// The import rules are a table in importrules_test.go, one row per
// package or package tree. A package that no row covers fails the test,
// so a new package needs a rule before it can land. Run it alone with
//
//	go test -run TestImportRules ./internal/importrules/
//
// It lists the module with `go list -e -json ./...` from the module root,
// so it needs the go command on PATH (go test puts it there). The same
// run checks, in roles_test.go, that the role packages listed there as
// libraries depend on no pprof, expvar, os/signal, Prometheus, libp2p
// constructor or CLI kit, even transitively: importing a role registers
// nothing globally.
//
// The construction convention ("Constructing things" in the root
// package's doc.go: option types, their names, no option accepted and
// ignored) is checked by construction_test.go. Run it alone with
//
//	go test -run TestConstruction ./internal/importrules/
//
// It parses the packages' source with go/parser (no type checking). Each
// rule it checks has a sub-test that feeds it a small package breaking
// that rule, so that the check is seen to fail.
package importrules
