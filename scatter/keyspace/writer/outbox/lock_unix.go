//go:build linux || darwin || freebsd

package outbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir opens path and takes an exclusive flock on it, which the kernel
// releases when the process dies.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("outbox: open: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("outbox: lock %s: %w", path, err)
	}
	return f, nil
}
