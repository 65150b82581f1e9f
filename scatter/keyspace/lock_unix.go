//go:build linux || darwin || freebsd

package keyspace

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (created if missing), waiting
// for it; the kernel releases it if the process dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
