package main

import "errors"

// errIncomplete is the error of a run whose end check found the pool
// incomplete: the front end did not answer every multihash of the
// publishers' truth in full within the check's bound. The program exits
// with [exitIncomplete] after it.
var errIncomplete = errors.New("the pool did not answer every multihash of its truth in full")

// Exit statuses of the program (see doc.go).
const (
	// exitError: a bad flag, a pool that did not start, or another error.
	exitError = 1
	// exitIncomplete: the end check found the pool incomplete.
	exitIncomplete = 3
)
