// Package errkind makes the sentinels that every package of the module
// declares for the same kind of failure match each other under
// errors.Is: an invalid option or Config field ([InvalidOption]), use
// after Close ([Closed]), and a second Run ([RunTwice]).
//
// # Model
//
// Each package keeps its own exported sentinel, with a message that names
// the package (ingest.ErrInvalidOption is "ingest: invalid option"), and
// makes it with [New]:
//
//	var ErrInvalidOption = errkind.New(errkind.InvalidOption, "ingest: invalid option")
//
// A sentinel made by New matches, under errors.Is, every other sentinel of
// the same [Kind], whichever package made it. So a caller who wires
// several packages checks one name: errors.Is(err, ingest.ErrInvalidOption)
// holds for an error of scatter.New as it does for one of ingest.New.
// Users cannot name this package (it is internal); they name any
// package's sentinel. Within a package the sentinels stay distinct values,
// so their messages keep naming the package, and a package may still
// compare its own sentinel with ==.
//
// A sentinel may also belong to an older, wider class of its package: New
// takes those errors after the message, and the sentinel unwraps to them
// (lease.ErrInvalidOption also matches lease.ErrInvalid).
//
// The test of this package checks both halves of the rule: that the
// sentinels of real packages match across packages, and that no library
// package declares an invalid-option, closed or run-twice sentinel of its
// own with errors.New.
//
// It imports the standard library only, so that every package of the
// module, leaves included, may import it.
package errkind
