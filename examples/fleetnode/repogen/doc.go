// Package repogen generates bare git repositories of text files, the
// catalog of the fleet's demo, sim, tests and benchmarks: each repo is one
// commit on branch main, made with git fast-import (no network, no
// configuration of the user's), with log-uniform text sizes and a binary
// file in every fifth repo. The same seed gives the same files.
//
// Every repo's README.md holds a line no other repo has, "marker-NNNN is
// the unique line of this repo", so that a search for it names one repo.
// Package repogen needs git on the PATH.
package repogen
