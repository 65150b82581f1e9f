package pebble

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms Go
// runs Linux on with 4 KiB pages (amd64, arm64).
const hugePage = 2 << 20

// newArena maps n bytes of anonymous memory outside the Go heap: the
// collector neither scans it nor counts it toward its next goal, and pages
// take memory only once written.
//
// An arena of a few huge pages or more is aligned to them and asks the
// kernel for them (MADV_HUGEPAGE, which counts where transparent huge
// pages are set to "madvise", as on Debian): a run's table is read and
// written at random, and with 4 KiB pages nearly every probe also missed
// the TLB; a run's records, written once in order, fault 2 MiB at a time
// instead of 4 KiB. Where the kernel gives none, the pages are small, as
// before. The mapping is made and unmade by pointer, for syscall.Munmap
// takes back only what syscall.Mmap returned, whole.
func newArena(n int) ([]byte, error) {
	size := uintptr(n)
	if n >= 2*hugePage {
		size += hugePage
	}
	p, err := unix.MmapPtr(-1, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, err
	}
	if size == uintptr(n) {
		return unsafe.Slice((*byte)(p), n), nil
	}
	head := -uintptr(p) & (hugePage - 1)
	if head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	if tail := size - head - uintptr(n); tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, head+uintptr(n)), tail)
	}
	a := unsafe.Slice((*byte)(unsafe.Add(p, head)), n)
	_ = unix.Madvise(a, unix.MADV_HUGEPAGE) // the kernel may say no
	return a, nil
}

// releaseArena gives a's pages back to the system; they read as zeros when
// next touched.
func releaseArena(a []byte) {
	if unix.Madvise(a, unix.MADV_DONTNEED) != nil {
		clear(a)
	}
}

func freeArena(a []byte) {
	if len(a) > 0 {
		_ = unix.MunmapPtr(unsafe.Pointer(&a[0]), uintptr(len(a)))
	}
}
