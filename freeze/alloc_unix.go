//go:build linux || darwin || freebsd

package freeze

import (
	"io/fs"
	"syscall"
)

// allocated returns the bytes the filesystem has allocated to the file of
// info: its 512-byte blocks as stat reports them, which counts space
// preallocated beyond the apparent size (Pebble's WAL) and leaves out the
// holes of a sparse file. Without a stat of its own it falls back to the
// apparent size.
func allocated(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Blocks >= 0 {
		return uint64(st.Blocks) * 512
	}
	return uint64(info.Size())
}
