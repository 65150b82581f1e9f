package pebble

import "syscall"

// newArena maps n bytes of anonymous memory outside the Go heap: the
// collector neither scans it nor counts it toward its next goal, and pages
// take memory only once written.
func newArena(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
}

// releaseArena gives a's pages back to the system; they read as zeros when
// next touched.
func releaseArena(a []byte) {
	if syscall.Madvise(a, syscall.MADV_DONTNEED) != nil {
		clear(a)
	}
}

func freeArena(a []byte) { _ = syscall.Munmap(a) }
