// Package loopbench measures an HTTP handler over loopback for the
// benchmarks of the find listeners' APIs (scatter/find, scatter/routing),
// so that they compare the same way.
//
// It imports the standard library only.
package loopbench
