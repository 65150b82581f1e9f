package freeze

import "syscall"

// blockSize is the unit of f_blocks, f_bfree and f_bavail: the fragment
// size on Linux.
func blockSize(st *syscall.Statfs_t) uint64 {
	if st.Frsize > 0 {
		return uint64(st.Frsize)
	}
	return uint64(st.Bsize)
}
