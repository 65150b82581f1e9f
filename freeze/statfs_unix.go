//go:build linux || darwin || freebsd

package freeze

import (
	"fmt"
	"os"
	"syscall"
)

// Usage implements [DiskReader] with statfs(2).
func (StatfsReader) Usage(dir string) (used, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	bsize := blockSize(&st)
	used = (uint64(st.Blocks) - uint64(st.Bfree)) * bsize
	return used, used + uint64(st.Bavail)*bsize, nil
}

// Device implements [DeviceReader] with stat(2).
func (StatfsReader) Device(dir string) (uint64, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	return statDevice(fi)
}

func statDevice(fi os.FileInfo) (uint64, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("stat %s: no device ID", fi.Name())
	}
	return uint64(st.Dev), nil
}
