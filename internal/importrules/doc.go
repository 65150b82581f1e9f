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
// table lists the role packages under examples/ that are libraries, and
// the same run (TestImportRules/Roles) checks that no package of the
// module they depend on parses flags, takes signals, serves profiles or
// imports the mains' CLI kit, and that none of their dependencies, third
// party ones included, is pprof, expvar, os/signal, Prometheus or the
// libp2p constructor unless the role's row exempts it with the reason:
// importing a role registers nothing globally.
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
