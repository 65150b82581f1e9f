// Package codeindex is the in-memory substring index a fleet node serves,
// and its snapshot format on disk.
//
// An Index maps each trigram (three consecutive bytes) of a tree of text
// files to the lines that contain it; Search intersects the posting lists
// of a query's trigrams and checks each candidate line, so its answers are
// exactly those of a scan of every line (Grep, the reference the tests
// compare against). New builds an index from files in memory, FromDir from
// a checked-out tree (skipping .git, symbolic links, binary files and
// files over MaxFileSize). An Index is immutable once built and safe for
// concurrent use; Size is its accounted memory, what a node charges to its
// budget, and Estimate guesses it before the build.
//
// # Integrity
//
// New takes a checksum of everything a search reads; Verify recomputes it
// and returns an error wrapping ErrCorrupt when a byte changed in memory
// since. A node runs it periodically and on every load.
//
// # Snapshots
//
// Encode writes an index at a commit in a versioned, checksummed format
// (a CRC-64 of the whole file), and Decode reads it back, checks every
// line and posting reference, recounts the accounted size and verifies
// the build checksum: a flipped byte, a truncated file or a decoder that
// went wrong is ErrCorrupt, another version ErrVersion, and a node indexes
// from git instead. Dir keeps one snapshot per repository and commit in a
// directory the nodes of a fleet may share; each write is a temporary
// file renamed into place.
package codeindex
