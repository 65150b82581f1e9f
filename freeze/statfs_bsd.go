//go:build darwin || freebsd

package freeze

import "syscall"

// blockSize is the unit of f_blocks, f_bfree and f_bavail.
func blockSize(st *syscall.Statfs_t) uint64 { return uint64(st.Bsize) }
