// Package importrules holds only a test: the one that enforces the import
// rules of DESIGN.md on every package of the module.
//
// The rules are a table in importrules_test.go, one row per package or
// package tree. A package that no row covers fails the test, so a new
// package needs a rule before it can land. Run it alone with
//
//	go test -run TestImportRules ./internal/importrules/
//
// It lists the module with `go list -e -json ./...` from the module root,
// so it needs the go command on PATH (go test puts it there).
package importrules
